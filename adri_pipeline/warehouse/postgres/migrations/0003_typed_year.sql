-- The publication year as a number, as the DuckDB warehouse stores it (its migration 0018). Safe to
-- run again: an integer year reads back as its text.
ALTER TABLE documents ALTER COLUMN year TYPE INTEGER
    USING substring(year::text from '^\s*(\d{4})(?:\.0|-\d{2}(?:-\d{2})?)?\s*$')::integer;
