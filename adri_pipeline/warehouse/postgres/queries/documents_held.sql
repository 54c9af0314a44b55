SELECT count(*) FROM documents WHERE doc_id = ANY(%(ids)s)
