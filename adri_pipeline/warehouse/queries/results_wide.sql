-- results_wide: one row per (document, model, codebook), one column per variable holding the answer's
-- label (a list variable's: a LIST of its labels), with the document's year, source and doi. Rebuilt
-- with each results refresh because its columns are the codebook's variables: warehouse/results.py puts
-- one {columns} entry per variable. Replacing a view drops its comments, so they are set again here,
-- every time, and the last line becomes one results_wide_variable statement per variable.
CREATE OR REPLACE VIEW results_wide AS
SELECT w.doc_id, w.model, w.codebook_hash, w.codebook_version, d.year, d.source, d.doi, d.title,
       w.* EXCLUDE (doc_id, model, codebook_hash, codebook_version)
FROM (
    SELECT doc_id, model, codebook_hash, codebook_version, {columns}
    FROM classification_values
    GROUP BY doc_id, model, codebook_hash, codebook_version
) w
LEFT JOIN documents d USING (doc_id);
COMMENT ON VIEW results_wide IS 'classification_values pivoted for analysts (adri export writes the same layout to a file, a list answer''s labels there joined by "; "): one row per (document, model, codebook) with an answer, one column per variable of the codebook whose results were refreshed last, holding the answer''s label (a list variable: a LIST of its labels). Recreated at every results refresh (adri classify, the Dagster classification_results asset).';
COMMENT ON COLUMN results_wide.doc_id IS 'The document (documents.doc_id).';
COMMENT ON COLUMN results_wide.model IS 'The model that answered, as backend:name.';
COMMENT ON COLUMN results_wide.codebook_hash IS 'The codebook the results are built for (codebooks.codebook_hash).';
COMMENT ON COLUMN results_wide.codebook_version IS 'That codebook''s version field.';
COMMENT ON COLUMN results_wide.year IS 'The document''s publication year, a number (documents.year).';
COMMENT ON COLUMN results_wide.source IS 'The corpus file the document was read from (documents.source).';
COMMENT ON COLUMN results_wide.doi IS 'The document''s DOI as its file writes it (documents.doi).';
COMMENT ON COLUMN results_wide.title IS 'The document''s title (documents.title).';
{variable_comments}
