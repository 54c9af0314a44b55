-- Why a corrected share's interval is wide for want of gold (classification/corrected.py
-- CORRECTED_SCHEMA `corrected_note`: a model answer that no coded document has). Null otherwise.
ALTER TABLE findings_corrected ADD COLUMN IF NOT EXISTS corrected_note VARCHAR;
