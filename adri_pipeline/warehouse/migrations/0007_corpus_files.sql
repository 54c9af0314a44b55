-- Each corpus file as last stored: a run whose file is byte-identical (same size and sha256) and read
-- with the same options takes its documents from `documents` instead of parsing the file again; a
-- cached rerun of a large corpus was mostly parsing (SCALING.md).
CREATE TABLE IF NOT EXISTS corpus_files (
    source VARCHAR PRIMARY KEY, size BIGINT, sha256 VARCHAR, options VARCHAR, documents BIGINT,
    stored_at TIMESTAMP DEFAULT current_timestamp
);
