SELECT * FROM classification_values WHERE codebook_hash = $codebook_hash
