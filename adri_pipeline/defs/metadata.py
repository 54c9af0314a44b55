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


def markdown_table(frame: pl.DataFrame) -> dg.MetadataValue:
    header = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns) + "\n"
    rows = "\n".join("| " + " | ".join(str(v) for v in row) + " |" for row in frame.iter_rows())
    return dg.MetadataValue.md(header + rows)
