INSERT INTO classification_failures (doc_id, model, signature, reason, run_id) VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (doc_id, model, signature) DO UPDATE SET reason = EXCLUDED.reason, run_id = EXCLUDED.run_id, failed_at = now()
