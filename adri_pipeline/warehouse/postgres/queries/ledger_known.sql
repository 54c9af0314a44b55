SELECT cache_key FROM ledger WHERE cache_key = ANY(%(keys)s)
