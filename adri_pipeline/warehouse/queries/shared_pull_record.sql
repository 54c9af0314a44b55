INSERT OR REPLACE INTO shared_ledger_pulls (ledger, horizon, rows_pulled, pulled_at)
VALUES ($ledger, $horizon, $rows_pulled, current_timestamp)
