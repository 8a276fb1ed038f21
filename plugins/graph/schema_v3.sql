-- Embedded store schema, version 3: the store counts backlinks once per write batch (one
-- GROUP BY over the edges it inserts) instead of a trigger firing per inserted edge row.
-- Deleting edges (rare, and by cascade) still decrements through edges_backlink_del.
DROP TRIGGER edges_backlink_add;
