-- Keys whose answers this transaction commits need no claim any more, whoever held it.
DELETE FROM ledger_claims WHERE cache_key = ANY(%(keys)s)
