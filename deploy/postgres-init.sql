-- The shared ledger gets a database of its own beside Dagster's (ADRI_LEDGER_URL points at it).
CREATE DATABASE adri;
