-- Documents answered (or failed again) in this run leave the failures list before the new failures go in.
DELETE FROM classification_failures WHERE model = $model AND signature = $signature AND list_contains($doc_ids, doc_id)
