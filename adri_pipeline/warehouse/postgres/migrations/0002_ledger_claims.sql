-- Leases on the documents a run is about to ask the model for (warehouse/shared.py, `Claims`): one row
-- per cache key a live worker holds, until `expires_at`. A worker skips a key another one holds, and
-- takes it over once the claim has expired (its holder died) or been released. A claim leaves when its
-- answer is committed (the same transaction), when its document fails or is not sent, and when its
-- worker ends; the claim of a worker killed with SIGKILL stays until it expires.
CREATE TABLE IF NOT EXISTS ledger_claims (
    cache_key TEXT PRIMARY KEY, doc_id TEXT NOT NULL, worker TEXT NOT NULL,
    claimed_at TIMESTAMPTZ NOT NULL DEFAULT now(), expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_claims_worker ON ledger_claims (worker);
