-- Columns added after their tables first shipped.
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS json_valid_first_try BOOLEAN;
ALTER TABLE classification_values ADD COLUMN IF NOT EXISTS evidence_field VARCHAR;
ALTER TABLE classification_values ADD COLUMN IF NOT EXISTS evidence_flag VARCHAR;
ALTER TABLE classification_documents ADD COLUMN IF NOT EXISTS json_valid_first_try BOOLEAN;
ALTER TABLE classification_documents ADD COLUMN IF NOT EXISTS source VARCHAR;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS run_id VARCHAR;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS task_id VARCHAR;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS main_model_calls BIGINT;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS exposed_fields VARCHAR;  -- JSON list
