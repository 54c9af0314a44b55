SELECT * FROM classification_figures WHERE model = $model AND codebook_hash = $codebook_hash
ORDER BY variable = '*' DESC, variable
