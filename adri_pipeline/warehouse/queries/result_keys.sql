-- Documents that already have results for a (model, codebook), with the cache key they were built from.
SELECT doc_id, cache_key FROM classification_documents WHERE model = $model AND codebook_hash = $codebook_hash
