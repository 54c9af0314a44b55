-- A random draw belongs to its corpus (classification/corrected.py population_hash): the hash and the
-- number of the ids of the corpus it was drawn from (the classified documents, reserved ones left out),
-- so corrected findings refuse another corpus; and the strata a stratified draw could not give a document (inclusion
-- probability zero), comma-separated.
ALTER TABLE coding_samples ADD COLUMN IF NOT EXISTS population_hash VARCHAR;
ALTER TABLE coding_samples ADD COLUMN IF NOT EXISTS corpus_documents BIGINT;
ALTER TABLE coding_samples ADD COLUMN IF NOT EXISTS strata_left_out VARCHAR;
