-- Documents answered (or failed again) in this run leave the failures list before the new failures go in.
DELETE FROM classification_failures WHERE model = %(model)s AND signature = %(signature)s AND doc_id = ANY(%(doc_ids)s)
