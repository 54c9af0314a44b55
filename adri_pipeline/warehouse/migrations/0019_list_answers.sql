-- A list variable's answer as DuckDB LISTs beside its text (issue 55: an analyst unnests or filters
-- list answers with list functions, not by splitting 'a|b'). Null for a variable that takes one value,
-- and in rows stored before this migration until the next results refresh rebuilds them.
ALTER TABLE classification_values ADD COLUMN IF NOT EXISTS value_list VARCHAR[];
ALTER TABLE classification_values ADD COLUMN IF NOT EXISTS label_list VARCHAR[];
COMMENT ON COLUMN classification_values.value_list IS 'A list variable''s values as a LIST (value holds them joined by |); null for a variable that takes one value.';
COMMENT ON COLUMN classification_values.label_list IS 'A list variable''s labels as a LIST, in the order of value_list (label holds them joined by "; "); null for a variable that takes one value.';
