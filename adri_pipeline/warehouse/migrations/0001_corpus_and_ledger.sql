-- The corpus, the codebooks and prompts it was classified with, and the content-hash ledger: one row
-- per model answer, keyed by everything that changes it (docs/classification.md).
CREATE TABLE IF NOT EXISTS documents (
    doc_id VARCHAR PRIMARY KEY, title VARCHAR, abstract VARCHAR, text VARCHAR,
    text_language VARCHAR, year VARCHAR, doi VARCHAR, source VARCHAR, line BIGINT
);
CREATE TABLE IF NOT EXISTS coverage (
    source VARCHAR PRIMARY KEY, rows BIGINT, included BIGINT, excluded_no_abstract BIGINT,
    skipped_duplicate BIGINT, loaded_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS prompt_signatures (
    signature VARCHAR PRIMARY KEY, prompt_version VARCHAR, system_message VARCHAR,
    response_schema JSON
);
CREATE TABLE IF NOT EXISTS codebooks (
    codebook_hash VARCHAR PRIMARY KEY, name VARCHAR, version VARCHAR, signature VARCHAR,
    path VARCHAR, content VARCHAR, loaded_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS ledger (
    cache_key VARCHAR PRIMARY KEY, doc_id VARCHAR, model VARCHAR, model_digest VARCHAR,
    backend VARCHAR, signature VARCHAR, prompt_version VARCHAR, params JSON,
    response JSON, audit JSON, attempts INTEGER, valid_first_try BOOLEAN, seconds DOUBLE,
    prompt_tokens BIGINT, completion_tokens BIGINT, created_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS document_vectors (
    vector_key VARCHAR, encoder VARCHAR, doc_id VARCHAR, spans JSON, dim INTEGER,
    document BLOB, windows BLOB, PRIMARY KEY (vector_key, encoder)
);
