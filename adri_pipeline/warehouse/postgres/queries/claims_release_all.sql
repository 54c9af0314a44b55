-- A worker that ends lets every claim it still holds go.
DELETE FROM ledger_claims WHERE worker = %(worker)s
