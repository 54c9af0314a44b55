-- The routing benchmark's rows per run name (a built-in dataset, a team file, or an evaluation on an
-- external test file): the canonical examples, each candidate's prediction per test example, and the
-- metrics flattened (docs/jev-benchmark.md). Created before by the first run's frames; declared here.
CREATE TABLE IF NOT EXISTS routing_examples (
    dataset VARCHAR, example_id VARCHAR, group_id VARCHAR, task VARCHAR, split VARCHAR,
    gold VARCHAR, synthetic BOOLEAN, example VARCHAR
);
CREATE TABLE IF NOT EXISTS routing_predictions (
    example_id VARCHAR, task VARCHAR, split VARCHAR, answer VARCHAR, gold VARCHAR,
    confidence DOUBLE, correct BOOLEAN, probabilities VARCHAR, threshold DOUBLE,
    native_confidence DOUBLE, candidate VARCHAR, dataset VARCHAR, run_config VARCHAR
);
CREATE TABLE IF NOT EXISTS routing_metrics (
    dataset VARCHAR, candidate VARCHAR, task VARCHAR, metric VARCHAR, value DOUBLE
);
