-- Random coding samples (classification/corrected.py): the documents a round drew at random from the
-- classified corpus, how (seed, stratum, weight) and from how many, so corrected findings use only
-- documents that were drawn, never ones picked by `adri suggest`.
CREATE TABLE IF NOT EXISTS coding_samples (
    round VARCHAR, doc_id VARCHAR, method VARCHAR, seed BIGINT, stratified_by VARCHAR, stratum VARCHAR,
    weight DOUBLE, population BIGINT, codebook_hash VARCHAR, model VARCHAR,
    drawn_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (round, doc_id)
);
-- the `findings_corrected` asset's table: per (variable, value) the model-only, coders-only and
-- corrected shares with their 95 % intervals (classification/corrected.py CORRECTED_SCHEMA)
CREATE TABLE IF NOT EXISTS findings_corrected (
    model VARCHAR, variable VARCHAR, value VARCHAR, label VARCHAR, coded BIGINT, classified BIGINT,
    model_share DOUBLE, model_low DOUBLE, model_high DOUBLE, coders_share DOUBLE, coders_low DOUBLE,
    coders_high DOUBLE, corrected_share DOUBLE, corrected_low DOUBLE, corrected_high DOUBLE,
    coded_for_width BIGINT, narrowest_width DOUBLE
);
