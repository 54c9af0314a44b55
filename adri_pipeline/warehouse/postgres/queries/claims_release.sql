-- This worker lets these keys go (failed, not sent, or answered): another worker may take them now.
DELETE FROM ledger_claims WHERE worker = %(worker)s AND cache_key = ANY(%(keys)s)
