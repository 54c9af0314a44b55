-- The shared ledger: what many classification runs, on many machines, commit to at once, with the
-- same content-hash keys as the DuckDB ledger (SCALING.md). `txid` is the transaction that
-- committed each answer: results are built into DuckDB from what every finished transaction holds
-- (queries/ledger_since.sql), never from a sequence that a slower transaction could fill in behind.
CREATE TABLE IF NOT EXISTS ledger (
    cache_key TEXT PRIMARY KEY, doc_id TEXT, model TEXT, model_digest TEXT, backend TEXT,
    signature TEXT, prompt_version TEXT, params TEXT, response TEXT, audit TEXT, attempts INTEGER,
    valid_first_try BOOLEAN, json_valid_first_try BOOLEAN, seconds DOUBLE PRECISION,
    prompt_tokens BIGINT, completion_tokens BIGINT, created_at TIMESTAMPTZ DEFAULT now(),
    txid XID8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX IF NOT EXISTS ledger_txid ON ledger (txid);
-- The documents each run reads its shards from: runs on other machines never see the DuckDB file.
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, shard TEXT NOT NULL, title TEXT, abstract TEXT, text TEXT,
    text_language TEXT, year TEXT, doi TEXT, source TEXT, line BIGINT
);
CREATE INDEX IF NOT EXISTS documents_shard ON documents (shard);
CREATE TABLE IF NOT EXISTS classification_runs (
    run_id TEXT PRIMARY KEY, origin TEXT, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ,
    backend TEXT, model TEXT, model_digest TEXT, params TEXT, codebook_hash TEXT, signature TEXT,
    selected BIGINT, cached BIGINT, classified BIGINT, failed BIGINT, model_calls BIGINT,
    stopped TEXT, figures TEXT
);
CREATE TABLE IF NOT EXISTS classification_failures (
    doc_id TEXT, model TEXT, signature TEXT, reason TEXT, run_id TEXT,
    failed_at TIMESTAMPTZ DEFAULT now(), PRIMARY KEY (doc_id, model, signature)
);
