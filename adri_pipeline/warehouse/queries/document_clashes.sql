-- Incoming documents (registered as _incoming) whose id is stored with another title or abstract.
SELECT i.doc_id, d.source, d.line, i.source, i.line
FROM _incoming i JOIN documents d USING (doc_id)
WHERE d.title IS DISTINCT FROM i.title OR d.abstract IS DISTINCT FROM i.abstract
ORDER BY i.line
