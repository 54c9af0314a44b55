-- Where the next pull from a shared ledger starts (warehouse/shared.py).
SELECT horizon FROM shared_ledger_pulls WHERE ledger = $ledger
