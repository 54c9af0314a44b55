-- Each (model, codebook) the warehouse holds results for, with its document count.
SELECT model, codebook_hash, any_value(codebook_version) AS codebook_version, count(DISTINCT doc_id) AS documents
FROM classification_values GROUP BY ALL ORDER BY model, codebook_hash
