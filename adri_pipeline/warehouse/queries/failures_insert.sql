INSERT INTO classification_failures (doc_id, model, signature, reason, run_id) VALUES (?, ?, ?, ?, ?)
