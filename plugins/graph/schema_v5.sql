-- Embedded store schema, version 5: node ids are unique per account, not across the file
-- (SPEC 8.1): another account's ids can be neither probed nor collided with. SQLite cannot drop
-- a column's UNIQUE constraint, so the table is rebuilt (rids, and so every side table, kept).
-- The unique index is (id, account_id): lookups by id keep using it.
DROP TRIGGER nodes_purge;
CREATE TABLE nodes_v5 (
  rid            INTEGER PRIMARY KEY,
  id             TEXT    NOT NULL,
  account_id     TEXT    NOT NULL,
  labels         TEXT    NOT NULL,          -- JSON array of labels
  properties     TEXT    NOT NULL,          -- JSON object (no reserved keys, no embedding)
  scope          TEXT,
  agents         TEXT,                      -- JSON array of agent slugs, NULL when untagged
  deleted_at     REAL,
  created_at     REAL    NOT NULL,
  updated_at     REAL    NOT NULL,
  dims           INTEGER,
  UNIQUE (id, account_id)
);
INSERT INTO nodes_v5 (rid, id, account_id, labels, properties, scope, agents, deleted_at, created_at, updated_at, dims)
  SELECT rid, id, account_id, labels, properties, scope, agents, deleted_at, created_at, updated_at, dims FROM nodes;
DROP TABLE nodes;
ALTER TABLE nodes_v5 RENAME TO nodes;
CREATE INDEX nodes_account ON nodes (account_id, deleted_at);
CREATE INDEX nodes_deleted ON nodes (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE INDEX nodes_vector_guard ON nodes (account_id, dims, deleted_at, scope);
-- Hard delete removes everything hanging off a node.
CREATE TRIGGER nodes_purge AFTER DELETE ON nodes BEGIN
  DELETE FROM edges WHERE source = OLD.rid;
  DELETE FROM edges WHERE target = OLD.rid;
  DELETE FROM node_labels WHERE node = OLD.rid;
  DELETE FROM node_agents WHERE node = OLD.rid;
  DELETE FROM node_keywords WHERE node = OLD.rid;
  DELETE FROM node_text WHERE rowid = OLD.rid;
  DELETE FROM node_vectors WHERE node = OLD.rid;
END;
