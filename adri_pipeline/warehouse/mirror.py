"""The shadow log and the mirror evaluations."""

from __future__ import annotations

import polars as pl

from adri_pipeline.warehouse.connection import Warehouse, sql


def store_shadow_log(warehouse: Warehouse, source: str, rows: pl.DataFrame, quarantine: pl.DataFrame) -> None:
    """Replace this log's rows and quarantined lines, even with nothing valid left (no stale rows)."""
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "shadow_log", rows, "source = ?", [source])
        warehouse.replace_rows(con, "shadow_quarantine", quarantine, "source = ?", [source])


def store_mirror_evaluations(warehouse: Warehouse, log: str, rows: pl.DataFrame) -> None:
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "mirror_evaluations", rows, "log = ?", [log])


def read_mirror_evaluations(warehouse: Warehouse) -> pl.DataFrame:
    return warehouse.query(sql("mirror_evaluations"))
