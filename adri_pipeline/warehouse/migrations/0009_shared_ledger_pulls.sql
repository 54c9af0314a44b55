-- How far each shared ledger (PostgreSQL, ADRI_LEDGER_URL) has been pulled into this warehouse.
CREATE TABLE IF NOT EXISTS shared_ledger_pulls (
    ledger VARCHAR PRIMARY KEY, horizon VARCHAR, rows_pulled BIGINT, pulled_at TIMESTAMP DEFAULT current_timestamp
);
