-- Rows committed by transactions from `since` on (the oldest transaction still open at the last pull,
-- pg_snapshot_xmin): every transaction older than that had finished before the last pull read, so it
-- was read then. Some rows come twice; the DuckDB side upserts by key.
SELECT {columns} FROM ledger WHERE txid >= %(since)s::text::xid8
