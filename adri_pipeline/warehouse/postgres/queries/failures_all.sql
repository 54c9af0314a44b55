SELECT doc_id, model, signature, reason, run_id, failed_at FROM classification_failures
