-- Coding rounds in Label Studio (classification/rounds.py): each pass's project, and every code
-- pulled from it with its coder, time, evidence span and the evidence audit.
CREATE TABLE IF NOT EXISTS coding_projects (
    round VARCHAR, pass VARCHAR, coder VARCHAR, project_id BIGINT, url VARCHAR, doc_ids VARCHAR[],
    codebook_hash VARCHAR, model VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (round, pass, coder)
);
CREATE TABLE IF NOT EXISTS coding_codes (
    round VARCHAR, pass VARCHAR, coder VARCHAR, doc_id VARCHAR, variable VARCHAR, value VARCHAR,
    evidencia VARCHAR, span_field VARCHAR, span_start INTEGER, span_end INTEGER, annotation_id BIGINT,
    project_id BIGINT, annotated_at TIMESTAMP, audit_status VARCHAR, audit_field VARCHAR,
    evidence_start INTEGER, evidence_end INTEGER, audit_score DOUBLE
);
-- coder vs coder on a round's blind pass, per (round, variable): the `coder_agreement` asset's table
CREATE TABLE IF NOT EXISTS coder_agreement (
    round VARCHAR, variable VARCHAR, measure VARCHAR, coders BIGINT, n BIGINT,
    agreement_pct DOUBLE, kappa DOUBLE, alpha DOUBLE
);
