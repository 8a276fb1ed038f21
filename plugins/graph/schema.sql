-- Embedded store schema, version 1 (SPEC 8.2). Applied by plugins/graph/migrations.py.
--
-- nodes.rid is the integer key every side table and the FTS5 rowid use; nodes.id is the
-- public id. Guarded columns (account_id, scope, agents, deleted_at) are real columns so
-- every guard layer is a WHERE clause. Embeddings are float32 bytes (dims = vector length).

CREATE TABLE nodes (
  rid            INTEGER PRIMARY KEY,
  id             TEXT    NOT NULL UNIQUE,
  account_id     TEXT    NOT NULL,
  labels         TEXT    NOT NULL,          -- JSON array of labels
  properties     TEXT    NOT NULL,          -- JSON object (no reserved keys, no embedding)
  scope          TEXT,
  agents         TEXT,                      -- JSON array of agent slugs, NULL when untagged
  deleted_at     REAL,
  created_at     REAL    NOT NULL,
  updated_at     REAL    NOT NULL,
  embedding      BLOB,
  dims           INTEGER,
  backlink_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX nodes_account ON nodes (account_id, deleted_at);
CREATE INDEX nodes_account_dims ON nodes (account_id, dims);
CREATE INDEX nodes_deleted ON nodes (deleted_at) WHERE deleted_at IS NOT NULL;

CREATE TABLE node_labels (
  label TEXT    NOT NULL,
  node  INTEGER NOT NULL,
  PRIMARY KEY (label, node)
) WITHOUT ROWID;
CREATE INDEX node_labels_node ON node_labels (node);

CREATE TABLE node_agents (
  agent TEXT    NOT NULL,
  node  INTEGER NOT NULL,
  PRIMARY KEY (agent, node)
) WITHOUT ROWID;
CREATE INDEX node_agents_node ON node_agents (node);

CREATE TABLE node_keywords (
  keyword TEXT    NOT NULL,                 -- lower-cased
  node    INTEGER NOT NULL,
  PRIMARY KEY (keyword, node)
) WITHOUT ROWID;
CREATE INDEX node_keywords_node ON node_keywords (node);

-- Typed edges, indexed for both directions.
CREATE TABLE edges (
  source     INTEGER NOT NULL,
  type       TEXT    NOT NULL,
  target     INTEGER NOT NULL,
  properties TEXT,
  created_at REAL    NOT NULL,
  PRIMARY KEY (source, type, target)
) WITHOUT ROWID;
CREATE INDEX edges_target ON edges (target, type, source);

-- BM25 over the canonical text-property union. unicode61 treats letters AND digits as token
-- characters, so `w5` is one token and `INV-2024-0042` / `3.12` are adjacent-token phrases.
CREATE VIRTUAL TABLE node_text USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');

-- backlinkCount: incoming typed edges, maintained by the database itself.
CREATE TRIGGER edges_backlink_add AFTER INSERT ON edges BEGIN
  UPDATE nodes SET backlink_count = backlink_count + 1 WHERE rid = NEW.target;
END;
CREATE TRIGGER edges_backlink_del AFTER DELETE ON edges BEGIN
  UPDATE nodes SET backlink_count = backlink_count - 1 WHERE rid = OLD.target;
END;

-- Hard delete removes everything hanging off a node.
CREATE TRIGGER nodes_purge AFTER DELETE ON nodes BEGIN
  DELETE FROM edges WHERE source = OLD.rid;
  DELETE FROM edges WHERE target = OLD.rid;
  DELETE FROM node_labels WHERE node = OLD.rid;
  DELETE FROM node_agents WHERE node = OLD.rid;
  DELETE FROM node_keywords WHERE node = OLD.rid;
  DELETE FROM node_text WHERE rowid = OLD.rid;
END;

-- The vector-indexed labels (SPEC 8.3); the schema-labels gate pins this list to the code.
CREATE TABLE vector_labels (label TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO vector_labels (label) VALUES
  ('Question'), ('DefinedTerm'), ('Review'), ('Service'), ('Person'), ('LocalBusiness'),
  ('PriceSpecification'), ('Task'), ('CreativeWork'), ('DigitalDocument'), ('KnowledgeDocument'),
  ('Section'), ('Chunk'), ('Conversation'), ('Message'), ('Event'), ('Workflow'), ('Preference'),
  ('Report');
