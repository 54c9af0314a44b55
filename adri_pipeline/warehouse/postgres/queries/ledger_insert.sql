-- An answer already there (another run got to the same key first) stays: same key, same inputs.
INSERT INTO ledger ({columns}) VALUES ({placeholders}) ON CONFLICT (cache_key) DO NOTHING
