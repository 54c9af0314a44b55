SELECT doc_id, title, abstract, text, text_language, year, doi, source, line
FROM documents WHERE shard = ANY(%(shards)s) ORDER BY source, line, doc_id
