-- What an analyst asks after a codebook edit: each codebook version beside the one before it (same
-- codebook name, in the order they were loaded), per model, document and variable. A label-only edit
-- shows as 'label changed' with the same value; a definition edit as 'value changed' where the model
-- answered differently.
CREATE OR REPLACE VIEW codebook_changes AS
WITH ordered AS (
    SELECT codebook_hash, name, version, loaded_at,
           lag(codebook_hash) OVER (PARTITION BY name ORDER BY loaded_at, codebook_hash) AS previous_hash,
           lag(version) OVER (PARTITION BY name ORDER BY loaded_at, codebook_hash) AS previous_version
    FROM codebooks
)
SELECT o.name AS codebook, o.previous_version, o.version AS current_version,
       o.previous_hash, o.codebook_hash AS current_hash, n.model, n.doc_id, n.variable,
       p.value AS previous_value, p.label AS previous_label, n.value AS current_value, n.label AS current_label,
       CASE WHEN p.doc_id IS NULL THEN 'new'
            WHEN p.value IS DISTINCT FROM n.value THEN 'value changed'
            WHEN p.label IS DISTINCT FROM n.label THEN 'label changed'
            ELSE 'same' END AS change
FROM ordered o
JOIN classification_values n ON n.codebook_hash = o.codebook_hash
LEFT JOIN classification_values p
       ON p.codebook_hash = o.previous_hash AND p.model = n.model AND p.doc_id = n.doc_id AND p.variable = n.variable
WHERE o.previous_hash IS NOT NULL;
COMMENT ON VIEW codebook_changes IS 'Each codebook version beside the one loaded before it (same name): per model, document and variable, the previous and current value and label, and what changed (new, value changed, label changed, same).';
