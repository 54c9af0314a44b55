"""The ledger's rows (classification/ledger.py decides what goes in; this is how) and the cached
document vectors (classification/coders.py decides what and when)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import polars as pl

from adri_pipeline.warehouse.connection import Warehouse, interrupts_given_back


def _rows_by_key(
    warehouse: Warehouse, table: str, key: str, columns: list[str], keys: list[str], where: str = "", params=()
) -> list[tuple]:
    """`columns` of the rows whose `key` is among `keys` (joined against the keys as a frame: thousands
    of keys stay one query)."""
    if not keys:
        return []
    with warehouse.connect() as con:
        con.register("_wanted", pl.DataFrame({key: keys}, schema={key: pl.String}))
        try:
            return con.execute(
                f"SELECT {', '.join(columns)} FROM {table} JOIN _wanted USING ({key})"
                + (f" WHERE {where}" if where else ""),
                list(params),
            ).fetchall()
        finally:
            con.unregister("_wanted")


def ledger_select(warehouse: Warehouse, columns: list[str], keys: list[str]) -> list[tuple]:
    """`columns` of the ledger rows whose cache_key is among `keys`."""
    return _rows_by_key(warehouse, "ledger", "cache_key", columns, keys)


@contextmanager
def ledger_writer(warehouse: Warehouse, columns: list[str]) -> Iterator:
    """One connection for the run; every commit(*records) is one statement, so one transaction: all of
    its rows are stored or none. DuckDB's cost is per statement (~5 ms here, whatever the rows): a
    run committing answers one by one was capped near 125 documents/s (BENCHMARKS.md)."""
    head = f"INSERT OR REPLACE INTO ledger ({', '.join(columns)}) VALUES "
    row = f"({', '.join('?' for _ in columns)})"
    with warehouse.connect() as con:

        def commit(*records: dict) -> None:
            if not records:
                return
            with interrupts_given_back():  # the run's connection stays open: translate at each commit
                con.execute(head + ", ".join(row for _ in records), [r[c] for r in records for c in columns])

        yield commit


VECTOR_COLUMNS = ["vector_key", "encoder", "doc_id", "spans", "dim", "document", "windows"]


def read_vectors(warehouse: Warehouse, keys: list[str], encoder: str) -> list[tuple]:
    """Cached vectors (in VECTOR_COLUMNS order) of the given content keys for this encoder."""
    return _rows_by_key(warehouse, "document_vectors", "vector_key", VECTOR_COLUMNS, keys, "encoder = ?", [encoder])


def store_vectors(warehouse: Warehouse, rows: list[tuple]) -> None:
    if rows:
        with warehouse.connect() as con:
            con.executemany(
                f"INSERT OR REPLACE INTO document_vectors ({', '.join(VECTOR_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in VECTOR_COLUMNS)})",
                rows,
            )
