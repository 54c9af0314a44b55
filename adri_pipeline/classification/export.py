"""Results the way analysts work: one row per document, one column per variable (the value's label),
with the document's metadata; optionally each answer's evidence, audit status, field and offsets.
The warehouse's `results_wide` view is the same table for analysts in DuckDB."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.errors import AdriError
from adri_pipeline.paths import replacing

FORMATS = ("csv", "parquet", "xlsx")
METADATA = ("doc_id", "title", "year", "source", "doi")
EVIDENCE = {
    "evidencia": "evidencia",
    "audit_status": "audit",
    "evidence_field": "field",
    "evidence_start": "start",
    "evidence_end": "end",
}


class ExportError(AdriError, ValueError):
    """The message names the output file or the format."""


def wide(values: pl.DataFrame, documents: pl.DataFrame, codebook: Codebook, evidence: bool = False) -> pl.DataFrame:
    """One row per answered document, in the corpus's order; columns: metadata, then per variable
    its label (and with `evidence`: `<variable>_evidencia`, `_audit`, `_field`, `_start`, `_end`)."""
    frame = documents.select(*METADATA)
    frame = frame.filter(pl.col("doc_id").is_in(values["doc_id"].unique().to_list()))
    for name in codebook.variables:
        extra = [pl.col(column).alias(f"{name}_{suffix}") for column, suffix in EVIDENCE.items()] if evidence else []
        mine = values.filter(pl.col("variable") == name).select("doc_id", pl.col("label").alias(name), *extra)
        frame = frame.join(mine, on="doc_id", how="left", maintain_order="left")
    return frame


FORMULA_START = r"^[=+\-@\t\r]"  # what a spreadsheet reads as the start of a formula in a CSV cell


def defused(frame: pl.DataFrame) -> pl.DataFrame:
    """Text cells that a spreadsheet would run as a formula (a title or a quote beginning with `=`,
    `+`, `-`, `@`, a tab or a carriage return: `=HYPERLINK("http://...")`) get a leading `'`, as
    OWASP's CSV-injection advice says; the text is otherwise unchanged. Only CSV needs it: xlsx stores
    them as strings and parquet is typed."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(
        pl.when(pl.col(name).str.contains(FORMULA_START))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name in text
    )


def write(frame: pl.DataFrame, fmt: str, path: Path) -> Path:
    """`frame` to `path` in `fmt`, written to a temporary file first so a failed write leaves any earlier
    export intact; a CSV's text cells `defused`."""
    if fmt not in FORMATS:
        raise ExportError(f"format {fmt!r}: choose one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.parent.is_dir():
        raise ExportError(f"{path}: folder {path.parent} does not exist")
    with replacing(path) as temporary:
        if fmt == "csv":
            defused(frame).write_csv(temporary)
        elif fmt == "parquet":
            frame.write_parquet(temporary)
        else:
            frame.write_excel(temporary, worksheet="results", autofit=True)
    return path
