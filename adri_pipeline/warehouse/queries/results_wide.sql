-- results_wide: one row per (document, model, codebook), one column per variable holding the value's
-- label, with the document's year, source and doi. Rebuilt with each results refresh because DuckDB
-- needs a view's pivot columns named: {variables} is the codebook's variables as quoted literals.
CREATE OR REPLACE VIEW results_wide AS
SELECT w.doc_id, w.model, w.codebook_hash, w.codebook_version, d.year, d.source, d.doi, d.title,
       w.* EXCLUDE (doc_id, model, codebook_hash, codebook_version)
FROM (
    PIVOT (SELECT doc_id, model, codebook_hash, codebook_version, variable, label FROM classification_values)
    ON variable IN ({variables}) USING first(label)
    GROUP BY doc_id, model, codebook_hash, codebook_version
) w
LEFT JOIN documents d USING (doc_id)
