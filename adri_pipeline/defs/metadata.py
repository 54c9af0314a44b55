"""Metadata shown in the Dagster UI, and the file hash data versions and cursors are made of."""

import hashlib
from pathlib import Path

import dagster as dg
import polars as pl

from adri_pipeline.warehouse.catalog import Column, Relation


def file_hash(path: Path) -> str:
    """sha256 of a file, or of every file in a folder (names and bytes, in name order)."""
    digest = hashlib.sha256()
    paths = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for item in paths:
        digest.update(item.name.encode() + item.read_bytes())
    return digest.hexdigest()


_COLUMN_TYPES = {pl.Boolean: "bool", pl.String: "string"}


def table_metadata(frame: pl.DataFrame) -> dg.MetadataValue:
    """A frame as Dagster's table metadata (typed columns the UI can sort), not Markdown."""

    def column_type(dtype) -> str:
        return "int" if dtype.is_integer() else "float" if dtype.is_float() else _COLUMN_TYPES.get(dtype, "string")

    schema = dg.TableSchema(columns=[dg.TableColumn(name, column_type(dtype)) for name, dtype in frame.schema.items()])
    records = [
        dg.TableRecord(
            {k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for k, v in row.items()}
        )
        for row in frame.iter_rows(named=True)
    ]
    return dg.MetadataValue.table(records=records, schema=schema)


def column_schema(columns: tuple[Column, ...]) -> dg.TableSchema:
    """Catalog columns as Dagster's column schema, each described by its comment."""
    return dg.TableSchema(columns=[dg.TableColumn(c.name, c.type, description=c.comment) for c in columns])


def warehouse_table(relation: Relation) -> dict:
    """Dagster's standard table metadata of a warehouse table: its columns as the catalog describes
    them, its rows, its name."""
    return {
        "dagster/column_schema": dg.MetadataValue.table_schema(column_schema(relation.columns)),
        "dagster/row_count": dg.MetadataValue.int(relation.rows),
        "dagster/table_name": relation.qualified_name,
    }


def warehouse_file(relations: list[Relation]) -> dict:
    """The same for a whole warehouse file (the analyst snapshot): every column of every table and view
    as `table.column`, the rows of all its tables together, and each table's rows and description."""
    columns = [
        dg.TableColumn(f"{r.name}.{c.name}", c.type, description=c.comment) for r in relations for c in r.columns
    ]
    tables = pl.DataFrame(
        [{"table": r.name, "kind": r.kind, "rows": r.rows, "description": r.comment} for r in relations],
        schema={"table": pl.String, "kind": pl.String, "rows": pl.Int64, "description": pl.String},
    )
    return {
        "dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(columns=columns)),
        "dagster/row_count": dg.MetadataValue.int(sum(r.rows or 0 for r in relations)),
        "tables": table_metadata(tables),
    }
