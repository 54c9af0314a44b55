-- The publication year as a number (issue 55: an analyst compares and groups years in SQL). A stored
-- year that is not one (text the reader kept as given before: '2019.0', '2019-05-01' keep their year)
-- becomes null, as the reader now stores it. Safe to run again: an INTEGER year reads back as its text.
ALTER TABLE documents ALTER COLUMN year SET DATA TYPE INTEGER
    USING TRY_CAST(regexp_extract(CAST(year AS VARCHAR), '^\s*(\d{4})(\.0|-\d{2}(-\d{2})?)?\s*$', 1) AS INTEGER);
COMMENT ON COLUMN documents.year IS 'Publication year (2019; a file''s 2019.0 or 2019-05-01 read as 2019); null when the file has none or gives something that is not a year (the load notes its file and line).';
