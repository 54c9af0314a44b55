-- The corrected findings' share of the corpus's own documents (classification/corrected.py
-- corpus_estimate: design-based, finite-population) beside the population's, and how many random
-- documents to code for it.
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS corpus_share DOUBLE;
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS corpus_low DOUBLE;
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS corpus_high DOUBLE;
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS corpus_coded_for_width BIGINT;
