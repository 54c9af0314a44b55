"""The routing benchmark's tables."""

from __future__ import annotations

import polars as pl

from adri_pipeline.warehouse.connection import Warehouse


def store_routing_tables(warehouse: Warehouse, dataset: str, frames: dict[str, pl.DataFrame]) -> None:
    """routing_examples / routing_predictions / routing_metrics: this dataset's rows replaced."""
    with warehouse.connect() as con:
        for table, frame in frames.items():
            warehouse.replace_rows(con, table, frame, "dataset = ?", [dataset])
