-- A live worker pushes the expiry of every claim it holds one lease further.
UPDATE ledger_claims SET expires_at = now() + make_interval(secs => %(lease_s)s) WHERE worker = %(worker)s
