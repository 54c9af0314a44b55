-- The stored documents of the given corpus files, in file and line order: what loading them gives.
SELECT doc_id, title, abstract, text, text_language, year, doi, source, line
FROM documents WHERE list_contains($sources, source)
ORDER BY list_position($sources, source), line
