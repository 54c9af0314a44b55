-- Every table and view of the open database's main schema, with the comment the migrations give it
-- (warehouse/catalog.py): DuckDB's own catalog, so what is described is what the file holds.
SELECT current_database() AS database, table_name AS name, 'table' AS kind, comment
FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND NOT temporary
UNION ALL
SELECT current_database(), view_name, 'view', comment
FROM duckdb_views()
WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND NOT temporary
ORDER BY name
