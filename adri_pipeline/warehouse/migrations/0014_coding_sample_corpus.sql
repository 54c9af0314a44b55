-- A random draw belongs to its corpus (classification/corrected.py population_hash): the hash and the
-- number of the ids of the corpus it was drawn from (the classified documents, reserved ones left out),
-- so corrected findings refuse another corpus; and the strata a stratified draw could not give a document (inclusion
-- probability zero), comma-separated.
ALTER TABLE coding_samples ADD COLUMN IF NOT EXISTS population_hash VARCHAR;
ALTER TABLE coding_samples ADD COLUMN IF NOT EXISTS corpus_documents BIGINT;
ALTER TABLE coding_samples ADD COLUMN IF NOT EXISTS strata_left_out VARCHAR;
-- The `findings_corrected` table: drawn documents without gold per share (its interval is then a
-- worst-case bound), the corrected estimate's standard error, and corrected shares per year and per
-- source (`grouped_by` "year" or "source", `group_name` the group; both empty for the whole corpus).
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS missing_gold BIGINT;
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS corrected_se DOUBLE;
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS grouped_by VARCHAR;
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS group_name VARCHAR;
