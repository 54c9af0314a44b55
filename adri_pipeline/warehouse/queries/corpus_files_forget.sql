-- Fingerprints of files whose documents were just replaced by another file's: they no longer read back whole.
DELETE FROM corpus_files WHERE list_contains($sources, source)
