-- Tables the Dagster content-hash IO manager writes (defs/io_managers.py): an asset's output, rewritten
-- only when its content hash (kept in asset_content_hashes) changes.
-- Before this migration the IO manager created these tables from whatever frame came: they are rebuilt
-- from the stored results at the next materialization (their hashes are forgotten so it rewrites them).
CREATE TABLE IF NOT EXISTS asset_content_hashes (asset VARCHAR PRIMARY KEY, content_hash VARCHAR);
DELETE FROM asset_content_hashes WHERE asset IN ('evidence_audits', 'validation_agreement', 'mirror_sample',
                                                 'mirror_judgements', 'mirror_evaluation');
DROP TABLE IF EXISTS evidence_audits;
DROP TABLE IF EXISTS validation_agreement;
DROP TABLE IF EXISTS mirror_sample;
DROP TABLE IF EXISTS mirror_judgements;
DROP TABLE IF EXISTS mirror_evaluation;
CREATE TABLE IF NOT EXISTS evidence_audits (
    model VARCHAR, codebook_hash VARCHAR, variable VARCHAR, answers BIGINT,
    literal_pct DOUBLE, approximate_pct DOUBLE, absent_pct DOUBLE, waived BIGINT  -- shares among quoted answers
);
CREATE TABLE IF NOT EXISTS validation_agreement (
    model VARCHAR, variable VARCHAR, measure VARCHAR, n BIGINT,
    agreement_pct DOUBLE, kappa DOUBLE, jaccard DOUBLE
);
-- the mirror's sampled and judged cases: shadow-log records plus sampling weight and judges' labels
CREATE TABLE IF NOT EXISTS mirror_sample (
    decision_point VARCHAR, timestamp VARCHAR, state_hash VARCHAR, state JSON, rule_decision VARCHAR,
    mirror_decision VARCHAR, probability DOUBLE, latency_ms DOUBLE, mode VARCHAR, used VARCHAR,
    outcome VARCHAR, truth VARCHAR, run_id VARCHAR, task_id VARCHAR, main_model_calls BIGINT,
    weight DOUBLE, stratum VARCHAR
);
CREATE TABLE IF NOT EXISTS mirror_judgements (
    decision_point VARCHAR, timestamp VARCHAR, state_hash VARCHAR, state JSON, rule_decision VARCHAR,
    mirror_decision VARCHAR, probability DOUBLE, latency_ms DOUBLE, mode VARCHAR, used VARCHAR,
    outcome VARCHAR, truth VARCHAR, run_id VARCHAR, task_id VARCHAR, main_model_calls BIGINT,
    weight DOUBLE, stratum VARCHAR, judge_a VARCHAR, judge_b VARCHAR
);
CREATE TABLE IF NOT EXISTS mirror_evaluation (
    decision_point VARCHAR, log VARCHAR, recommendation VARCHAR, evaluation JSON
);
