-- The stored fingerprints of the given corpus files (a list parameter).
SELECT source, size, sha256, options, documents FROM corpus_files WHERE list_contains($sources, source)
