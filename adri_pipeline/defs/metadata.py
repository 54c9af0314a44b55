"""Metadata shown in the Dagster UI, and the file hash data versions and cursors are made of."""

import hashlib
from pathlib import Path

import dagster as dg
import polars as pl


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
    records = [dg.TableRecord({k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
                               for k, v in row.items()}) for row in frame.iter_rows(named=True)]
    return dg.MetadataValue.table(records=records, schema=schema)
