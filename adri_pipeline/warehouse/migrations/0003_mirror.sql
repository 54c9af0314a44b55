-- The mirror's shadow logs as ingested (bad lines quarantined, redacted) and their evaluations.
CREATE TABLE IF NOT EXISTS shadow_log (
    decision_point VARCHAR, timestamp VARCHAR, state_hash VARCHAR, rule_decision VARCHAR,
    mirror_decision VARCHAR, probability DOUBLE, latency_ms DOUBLE, mode VARCHAR, used VARCHAR,
    outcome VARCHAR, truth VARCHAR, state JSON, source VARCHAR
);
CREATE TABLE IF NOT EXISTS shadow_quarantine (line BIGINT, error VARCHAR, raw VARCHAR, source VARCHAR);
CREATE TABLE IF NOT EXISTS mirror_evaluations (
    decision_point VARCHAR, log VARCHAR, recommendation VARCHAR, evaluation JSON
);
