-- Version 7: both full-text indexes are contentless (content='').
--
-- Each FTS5 table kept its own copy of every node's text (a third copy: nodes.properties holds
-- the first), though BM25 needs only the terms and document sizes. A contentless index cannot
-- read back what it was given, so removing a node's terms needs the same text again:
-- node_text_of(properties), the store's text_of registered on each of its connections, gives
-- it from the node row, before the row changes (plugins/graph/sqlite_store/writes.py) or goes
-- (the purge trigger below). A connection without that function cannot delete nodes: the
-- trigger fails rather than leaving stale terms behind.
DROP TRIGGER nodes_purge;

CREATE VIRTUAL TABLE node_text_v7 USING fts5 (text, content = '', tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO node_text_v7 (rowid, text) SELECT rowid, text FROM node_text;
DROP TABLE node_text;
ALTER TABLE node_text_v7 RENAME TO node_text;

CREATE VIRTUAL TABLE node_text_stem_v7 USING fts5 (text, content = '', tokenize = 'porter unicode61 remove_diacritics 2');
INSERT INTO node_text_stem_v7 (rowid, text) SELECT rowid, text FROM node_text_stem;
DROP TABLE node_text_stem;
ALTER TABLE node_text_stem_v7 RENAME TO node_text_stem;

CREATE TRIGGER nodes_purge AFTER DELETE ON nodes BEGIN
  DELETE FROM edges WHERE source = OLD.rid;
  DELETE FROM edges WHERE target = OLD.rid;
  DELETE FROM node_labels WHERE node = OLD.rid;
  DELETE FROM node_agents WHERE node = OLD.rid;
  DELETE FROM node_keywords WHERE node = OLD.rid;
  INSERT INTO node_text (node_text, rowid, text)
    SELECT 'delete', OLD.rid, t FROM (SELECT node_text_of(OLD.properties) AS t) WHERE t IS NOT NULL;
  INSERT INTO node_text_stem (node_text_stem, rowid, text)
    SELECT 'delete', OLD.rid, t FROM (SELECT node_text_of(OLD.properties) AS t) WHERE t IS NOT NULL;
  DELETE FROM node_vectors WHERE node = OLD.rid;
END;
