-- Every document drawn at random for a coding round, the earliest round first.
SELECT * FROM coding_samples ORDER BY drawn_at, round, doc_id
