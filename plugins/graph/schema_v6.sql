-- Embedded store schema, version 6: a stemmed shadow of the BM25 index (memory-search
-- PLUGHOST_GS_STEM). Same rows and text as node_text; the porter tokenizer wraps the same
-- unicode61 one, so letters and digits stay token characters (`w5`, `3.12`, `INV-2024-0042`
-- match as before) and English words fold to their stems ("moved", "moving" → "move").
-- node_text itself is untouched: the SPEC 9.4 baseline ranks on it bit for bit.
CREATE VIRTUAL TABLE node_text_stem USING fts5 (text, tokenize = 'porter unicode61 remove_diacritics 2');
INSERT INTO node_text_stem (rowid, text) SELECT rowid, text FROM node_text;
DROP TRIGGER nodes_purge;
-- Hard delete removes everything hanging off a node.
CREATE TRIGGER nodes_purge AFTER DELETE ON nodes BEGIN
  DELETE FROM edges WHERE source = OLD.rid;
  DELETE FROM edges WHERE target = OLD.rid;
  DELETE FROM node_labels WHERE node = OLD.rid;
  DELETE FROM node_agents WHERE node = OLD.rid;
  DELETE FROM node_keywords WHERE node = OLD.rid;
  DELETE FROM node_text WHERE rowid = OLD.rid;
  DELETE FROM node_text_stem WHERE rowid = OLD.rid;
  DELETE FROM node_vectors WHERE node = OLD.rid;
END;
