INSERT INTO documents (doc_id, shard, title, abstract, text, text_language, year, doi, source, line)
SELECT doc_id, shard, title, abstract, text, text_language, year, doi, source, line FROM incoming_documents
ON CONFLICT (doc_id) DO UPDATE SET shard = EXCLUDED.shard, title = EXCLUDED.title, abstract = EXCLUDED.abstract,
    text = EXCLUDED.text, text_language = EXCLUDED.text_language, year = EXCLUDED.year, doi = EXCLUDED.doi,
    source = EXCLUDED.source, line = EXCLUDED.line
