-- The text of a codebook as prompt_signature stored it, by content hash: what the assets after it read.
SELECT content, path FROM codebooks WHERE codebook_hash = $codebook_hash AND content <> ''
