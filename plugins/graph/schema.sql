-- Embedded store schema, version 7 (docs/graph.md#stores): applied whole to a new file by
-- plugins/graph/sqlite_store/schema.py, which refuses a file at any other version. There are no
-- migrations before the first release: until then this file is edited in place.
--
-- nodes.rid is the integer key every side table and the FTS5 rowid use; nodes.id is the
-- public id, unique per account (docs/guards.md#the-guards). Guarded columns (account_id, scope, agents,
-- deleted_at) are real columns so every guard layer is a WHERE clause.

CREATE TABLE nodes (
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
  dims           INTEGER,                   -- vector length when the node has one (node_vectors)
  UNIQUE (id, account_id)                   -- lookups by id use this index
);
CREATE INDEX nodes_account ON nodes (account_id, deleted_at);
CREATE INDEX nodes_deleted ON nodes (deleted_at) WHERE deleted_at IS NOT NULL;
-- Vector candidates (account, vector length, guards) come from this index alone.
CREATE INDEX nodes_vector_guard ON nodes (account_id, dims, deleted_at, scope);
-- The memory plugin's entity lookup (find where entityKey = ?, docs/retrieval.md#entities); partial:
-- only Entity nodes carry the property. Files made before it get it when a store opens them.
CREATE INDEX nodes_entity_key ON nodes (json_extract(properties, '$."entityKey"'))
  WHERE json_extract(properties, '$."entityKey"') IS NOT NULL;
-- The keyed lookups of per-visitor memory and time on tasks (find where <key> = ?); partial, as above.
CREATE INDEX nodes_visitor_key ON nodes (json_extract(properties, '$."visitorKey"'))
  WHERE json_extract(properties, '$."visitorKey"') IS NOT NULL;
CREATE INDEX nodes_slice_token ON nodes (json_extract(properties, '$."sliceToken"'))
  WHERE json_extract(properties, '$."sliceToken"') IS NOT NULL;
CREATE INDEX nodes_task_id ON nodes (json_extract(properties, '$."taskId"'))
  WHERE json_extract(properties, '$."taskId"') IS NOT NULL;
-- A conversation's Messages (find where conversationId = ?): the webchat re-reads them on every poll.
CREATE INDEX nodes_conversation_id ON nodes (json_extract(properties, '$."conversationId"'))
  WHERE json_extract(properties, '$."conversationId"') IS NOT NULL;

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

-- Typed edges, indexed for both directions. backlinkCount is counted on edges_target when a
-- node is read (a covering index range, exact by construction): nothing to maintain on write.
CREATE TABLE edges (
  source     INTEGER NOT NULL,
  type       TEXT    NOT NULL,
  target     INTEGER NOT NULL,
  properties TEXT,
  created_at REAL    NOT NULL,
  PRIMARY KEY (source, type, target)
) WITHOUT ROWID;
CREATE INDEX edges_target ON edges (target, type, source);

-- Vectors out of the node rows: the matrix cache reads them sequentially and loads only what
-- changed (seq); rewriting a node row does not rewrite its blob.
CREATE TABLE node_vectors (
  node      INTEGER PRIMARY KEY,
  seq       INTEGER NOT NULL,               -- write sequence: the matrix cache loads only what changed
  embedding BLOB    NOT NULL                -- float32 bytes
);
CREATE INDEX node_vectors_seq ON node_vectors (seq);

-- BM25 over the canonical text-property union. unicode61 treats letters AND digits as token
-- characters, so `w5` is one token and `INV-2024-0042` / `3.12` are adjacent-token phrases.
-- Both full-text indexes are contentless (content=''): BM25 needs only the terms and document
-- sizes, and nodes.properties already holds the text. A contentless index cannot read back what
-- it was given, so removing a node's terms needs the same text again: node_text_of(properties),
-- the store's text_of registered on each of its connections, gives it from the node row, before
-- the row changes (plugins/graph/sqlite_store/writes.py) or goes (the purge trigger below). A
-- connection without that function cannot delete nodes: the trigger fails rather than leaving
-- stale terms behind.
CREATE VIRTUAL TABLE node_text USING fts5 (text, content = '', tokenize = 'unicode61 remove_diacritics 2');
-- Its stemmed shadow (memory-search PLUGHOST_GS_STEM): same rows and text; the porter tokenizer
-- wraps the same unicode61 one, so English words fold to their stems ("moved", "moving" ->
-- "move") while tokens stay as above. node_text itself is the baseline (docs/retrieval.md#baseline), bit for bit.
CREATE VIRTUAL TABLE node_text_stem USING fts5 (text, content = '', tokenize = 'porter unicode61 remove_diacritics 2');

-- Hard delete removes everything hanging off a node.
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

-- The vector-indexed labels (docs/graph.md#labels); the schema-labels gate pins this list to the code.
CREATE TABLE vector_labels (label TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO vector_labels (label) VALUES
  ('Question'), ('DefinedTerm'), ('Review'), ('Service'), ('Person'), ('LocalBusiness'),
  ('PriceSpecification'), ('Task'), ('CreativeWork'), ('DigitalDocument'), ('KnowledgeDocument'),
  ('Section'), ('Chunk'), ('Conversation'), ('Message'), ('Event'), ('Workflow'), ('Preference'),
  ('Report');
