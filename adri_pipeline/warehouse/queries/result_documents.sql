SELECT * FROM classification_documents WHERE model = $model AND codebook_hash = $codebook_hash ORDER BY doc_id
