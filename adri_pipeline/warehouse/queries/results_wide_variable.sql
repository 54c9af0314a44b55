-- The comment on results_wide's column for one codebook variable: warehouse/results.py fills in the
-- column as a quoted identifier, and the variable's name and the codebook's definition of it with
-- their single quotes doubled.
COMMENT ON COLUMN results_wide.{column} IS 'The label of the answer to the codebook variable {variable} (classification_values.label; a list variable''s: a LIST of its labels, classification_values.label_list); null where the (document, model, codebook) has no answer to it. Definition: {definition}';
