-- What the results hold, in two numbers: equal in the warehouse and its snapshot, the snapshot is current.
SELECT count(*), coalesce(sum(hash(doc_id, model, codebook_hash, cache_key)), 0) FROM classification_documents
