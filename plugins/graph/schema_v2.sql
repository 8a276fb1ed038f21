-- Embedded store schema, version 2: vectors and backlink counts move out of the node rows.
-- The matrix cache reads vectors sequentially and loads only what changed (seq); rewriting a
-- node row (an update, a new backlink) no longer rewrites a 1.5 kB blob.

CREATE TABLE node_vectors (
  node      INTEGER PRIMARY KEY,
  seq       INTEGER NOT NULL,               -- write sequence: the matrix cache loads only what changed
  embedding BLOB    NOT NULL                -- float32 bytes
);
CREATE INDEX node_vectors_seq ON node_vectors (seq);
INSERT INTO node_vectors (node, seq, embedding) SELECT rid, 1, embedding FROM nodes WHERE embedding IS NOT NULL;

-- backlinkCount: incoming typed edges, maintained by the triggers below (small rows, cheap).
CREATE TABLE backlinks (
  node  INTEGER PRIMARY KEY,
  count INTEGER NOT NULL
);
INSERT INTO backlinks (node, count) SELECT target, count(*) FROM edges GROUP BY target;

DROP TRIGGER edges_backlink_add;
DROP TRIGGER edges_backlink_del;
DROP TRIGGER nodes_purge;
CREATE TRIGGER edges_backlink_add AFTER INSERT ON edges BEGIN
  INSERT INTO backlinks (node, count) VALUES (NEW.target, 1)
    ON CONFLICT (node) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER edges_backlink_del AFTER DELETE ON edges BEGIN
  UPDATE backlinks SET count = count - 1 WHERE node = OLD.target;
END;
-- Hard delete removes everything hanging off a node.
CREATE TRIGGER nodes_purge AFTER DELETE ON nodes BEGIN
  DELETE FROM edges WHERE source = OLD.rid;
  DELETE FROM edges WHERE target = OLD.rid;
  DELETE FROM node_labels WHERE node = OLD.rid;
  DELETE FROM node_agents WHERE node = OLD.rid;
  DELETE FROM node_keywords WHERE node = OLD.rid;
  DELETE FROM node_text WHERE rowid = OLD.rid;
  DELETE FROM node_vectors WHERE node = OLD.rid;
  DELETE FROM backlinks WHERE node = OLD.rid;
END;

-- Vector candidates (account, vector length, guards) come from this index alone.
DROP INDEX nodes_account_dims;
CREATE INDEX nodes_vector_guard ON nodes (account_id, dims, deleted_at, scope);

ALTER TABLE nodes DROP COLUMN embedding;
ALTER TABLE nodes DROP COLUMN backlink_count;
