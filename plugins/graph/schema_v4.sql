-- Embedded store schema, version 4: backlinkCount is counted on edges_target when a node is read
-- (a covering index range, exact by construction) instead of a table every edge write updates.
DROP TRIGGER edges_backlink_del;
DROP TRIGGER nodes_purge;
DROP TABLE backlinks;
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
