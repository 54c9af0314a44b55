-- The stored coverage rows of the given corpus files, in the order given.
SELECT source, rows, included, excluded_no_abstract, skipped_duplicate FROM coverage
WHERE list_contains($sources, source) ORDER BY list_position($sources, source)
