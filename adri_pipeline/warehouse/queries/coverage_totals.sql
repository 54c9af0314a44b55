-- Documents included and rows read over every corpus file loaded.
SELECT coalesce(sum(included), 0)::BIGINT AS inc, coalesce(sum(rows), 0)::BIGINT AS total FROM coverage
