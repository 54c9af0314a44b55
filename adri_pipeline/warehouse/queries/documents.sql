SELECT * FROM documents ORDER BY source, line
