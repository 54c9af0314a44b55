-- Where the next pull starts: no transaction below it is still open in this snapshot.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text
