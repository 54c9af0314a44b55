SELECT run_id, origin, started_at, finished_at, backend, model, model_digest, params, codebook_hash, signature,
       selected, cached, classified, failed, model_calls, stopped, figures FROM classification_runs
