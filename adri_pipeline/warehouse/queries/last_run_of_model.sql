-- The latest classification run of one model: what the panel shows when a principal model is set.
SELECT * FROM classification_runs WHERE model = $model ORDER BY started_at DESC, finished_at DESC LIMIT 1
