SELECT * FROM classification_values WHERE model = $model AND codebook_hash = $codebook_hash ORDER BY doc_id, variable
