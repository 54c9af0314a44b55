-- Results per (model, codebook): one row per answered variable and per document, the runs that made
-- them, the documents that got no answer, and the ADR 0011 figures.
CREATE TABLE IF NOT EXISTS classification_values (
    doc_id VARCHAR, model VARCHAR, codebook_hash VARCHAR, codebook_version VARCHAR,
    variable VARCHAR, value VARCHAR, label VARCHAR, evidencia VARCHAR, audit_status VARCHAR,
    evidence_start INTEGER, evidence_end INTEGER, attempt INTEGER, cache_key VARCHAR
);
CREATE TABLE IF NOT EXISTS classification_documents (
    doc_id VARCHAR, model VARCHAR, codebook_hash VARCHAR, codebook_version VARCHAR,
    attempts INTEGER, valid_first_try BOOLEAN, seconds DOUBLE, prompt_tokens BIGINT,
    completion_tokens BIGINT, cache_key VARCHAR
);
CREATE TABLE IF NOT EXISTS classification_runs (
    run_id VARCHAR PRIMARY KEY, origin VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP,
    backend VARCHAR, model VARCHAR, model_digest VARCHAR, params JSON, codebook_hash VARCHAR,
    signature VARCHAR, selected BIGINT, cached BIGINT, classified BIGINT, failed BIGINT,
    model_calls BIGINT, stopped VARCHAR, figures JSON
);
CREATE TABLE IF NOT EXISTS classification_failures (
    doc_id VARCHAR, model VARCHAR, signature VARCHAR, reason VARCHAR, run_id VARCHAR,
    failed_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (doc_id, model, signature)
);
CREATE TABLE IF NOT EXISTS classification_figures (
    model VARCHAR, codebook_hash VARCHAR, variable VARCHAR, documents BIGINT,
    json_valid_first_try_pct DOUBLE, valid_first_try_pct DOUBLE, retry_pct DOUBLE,
    literal_pct DOUBLE, approximate_pct DOUBLE, absent_pct DOUBLE, waived BIGINT,
    over_20_words BIGINT, seconds_median DOUBLE, seconds_p90 DOUBLE
);
