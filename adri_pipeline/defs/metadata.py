"""Metadata shown in the Dagster UI."""

import dagster as dg
import polars as pl


def markdown_table(frame: pl.DataFrame) -> dg.MetadataValue:
    header = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns) + "\n"
    rows = "\n".join("| " + " | ".join(str(v) for v in row) + " |" for row in frame.iter_rows())
    return dg.MetadataValue.md(header + rows)
