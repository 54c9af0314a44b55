-- Every column of the open database's main schema, in each table's own order, with its comment.
SELECT table_name, column_name, data_type, comment
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
ORDER BY table_name, column_index
