SELECT * FROM documents WHERE list_contains($doc_ids, doc_id)
