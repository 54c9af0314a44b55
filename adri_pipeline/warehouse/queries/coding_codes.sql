-- Every code pulled from one coding round's projects.
SELECT * FROM coding_codes WHERE round = $round ORDER BY pass, coder, doc_id, variable
