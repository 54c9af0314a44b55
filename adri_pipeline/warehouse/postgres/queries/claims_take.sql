-- This worker's claim on each key the ledger lacks and no live worker holds: a new row, or a claim
-- that has expired (or is this worker's own) taken over. Two workers claiming one key at once: the
-- second waits on the first's row and its WHERE then sees the first's live claim. Returns the keys
-- this worker now holds; the caller checks them against the ledger once more (claims_take's snapshot
-- may predate an answer committed while it waited).
INSERT INTO ledger_claims (cache_key, doc_id, worker, claimed_at, expires_at)
SELECT wanted.cache_key, wanted.doc_id, %(worker)s, now(), now() + make_interval(secs => %(lease_s)s)
FROM unnest(%(keys)s::text[], %(doc_ids)s::text[]) AS wanted (cache_key, doc_id)
WHERE NOT EXISTS (SELECT 1 FROM ledger WHERE ledger.cache_key = wanted.cache_key)
ON CONFLICT (cache_key) DO UPDATE SET doc_id = EXCLUDED.doc_id, worker = EXCLUDED.worker,
    claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
WHERE ledger_claims.expires_at <= now() OR ledger_claims.worker = EXCLUDED.worker
RETURNING cache_key
