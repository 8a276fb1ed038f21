-- Embedded store schema, version 3: the store maintains backlink counts once per edge write
-- batch (it recounts the targets the batch touched, through edges_target) instead of a trigger
-- firing per inserted edge row. Deleting edges (rare, and by cascade) still decrements through
-- edges_backlink_del.
DROP TRIGGER edges_backlink_add;
