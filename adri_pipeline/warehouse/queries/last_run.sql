SELECT * FROM classification_runs ORDER BY started_at DESC, finished_at DESC LIMIT 1
