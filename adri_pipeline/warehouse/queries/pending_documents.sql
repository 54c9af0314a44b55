-- Documents in the warehouse with no answer from this (model, codebook).
SELECT count(*) AS n FROM documents
WHERE doc_id NOT IN (SELECT doc_id FROM classification_documents WHERE model = $model AND codebook_hash = $codebook_hash)
