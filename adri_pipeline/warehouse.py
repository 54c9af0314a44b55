"""The one DuckDB access layer: short write connections, batched writes, an analyst snapshot.

DuckDB allows one writer per file and an open read-only session blocks every writer, so analysts
never open the writer's file: they read `<name>_snapshot.duckdb`, republished atomically after each
run that writes (see DESIGN §3).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import polars as pl

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id VARCHAR PRIMARY KEY, title VARCHAR, abstract VARCHAR, text VARCHAR,
    text_language VARCHAR, year VARCHAR, doi VARCHAR, source VARCHAR, line BIGINT
);
CREATE TABLE IF NOT EXISTS coverage (
    source VARCHAR PRIMARY KEY, rows BIGINT, included BIGINT, excluded_no_abstract BIGINT,
    skipped_duplicate BIGINT, loaded_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS prompt_signatures (
    signature VARCHAR PRIMARY KEY, prompt_version VARCHAR, system_message VARCHAR,
    response_schema JSON
);
CREATE TABLE IF NOT EXISTS codebooks (
    codebook_hash VARCHAR PRIMARY KEY, name VARCHAR, version VARCHAR, signature VARCHAR,
    path VARCHAR, content VARCHAR, loaded_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS ledger (
    cache_key VARCHAR PRIMARY KEY, doc_id VARCHAR, model VARCHAR, model_digest VARCHAR,
    backend VARCHAR, signature VARCHAR, prompt_version VARCHAR, params JSON,
    response JSON, audit JSON, attempts INTEGER, valid_first_try BOOLEAN, seconds DOUBLE,
    prompt_tokens BIGINT, completion_tokens BIGINT, created_at TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS classification_values (
    doc_id VARCHAR, model VARCHAR, codebook_hash VARCHAR, codebook_version VARCHAR,
    variable VARCHAR, value VARCHAR, label VARCHAR, evidencia VARCHAR, audit_status VARCHAR,
    evidence_start INTEGER, evidence_end INTEGER, attempt INTEGER, cache_key VARCHAR
);
CREATE TABLE IF NOT EXISTS classification_documents (
    doc_id VARCHAR, model VARCHAR, codebook_hash VARCHAR, codebook_version VARCHAR,
    attempts INTEGER, valid_first_try BOOLEAN, seconds DOUBLE, prompt_tokens BIGINT,
    completion_tokens BIGINT, cache_key VARCHAR
);
"""


class WarehouseLocked(RuntimeError):
    """Another process holds the writer's file; the message says what to do."""


class Warehouse:
    def __init__(self, path: str | Path, lock_timeout_s: float = 10.0):
        self.path = Path(path)
        self.lock_timeout_s = lock_timeout_s

    @property
    def snapshot_path(self) -> Path:
        return self.path.with_name(self.path.stem + "_snapshot.duckdb")

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A write connection that is always closed, even when the body raises."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                con = duckdb.connect(str(self.path))
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise WarehouseLocked(
                        f"{self.path}: another process holds the warehouse ({exc}). Analysts should "
                        f"query the snapshot {self.snapshot_path} instead of the writer's file."
                    ) from None
                time.sleep(0.2)
        try:
            con.execute(SCHEMA)
            yield con
        finally:
            con.close()

    def replace_rows(self, con, table: str, frame: pl.DataFrame, where: str = "", params=()) -> None:
        """Delete the rows matching `where` (all rows if empty) and insert `frame`, in one transaction."""
        con.execute("BEGIN")
        try:
            con.execute(f"DELETE FROM {table}" + (f" WHERE {where}" if where else ""), list(params))
            if frame.height:
                columns = ", ".join(frame.columns)
                con.register("_batch", frame)
                con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM _batch")
                con.unregister("_batch")
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise

    def upsert(self, con, table: str, frame: pl.DataFrame) -> None:
        if frame.height:
            columns = ", ".join(frame.columns)
            con.register("_batch", frame)
            con.execute(f"INSERT OR REPLACE INTO {table} ({columns}) SELECT {columns} FROM _batch")
            con.unregister("_batch")

    def query(self, sql: str, params=()) -> pl.DataFrame:
        with self.connect() as con:
            return con.sql(sql, params=list(params)).pl()

    def publish_snapshot(self) -> Path:
        """Copy the warehouse to a temporary file and rename it over the snapshot atomically."""
        tmp = self.snapshot_path.with_suffix(f".tmp{os.getpid()}")
        tmp.unlink(missing_ok=True)
        with self.connect() as con:
            con.execute(f"ATTACH '{tmp}' AS snapshot_tmp")
            try:
                con.execute("COPY FROM DATABASE {} TO snapshot_tmp".format(_current_database(con)))
            finally:
                con.execute("DETACH snapshot_tmp")
        os.replace(tmp, self.snapshot_path)
        return self.snapshot_path


def _current_database(con) -> str:
    return con.execute("SELECT current_database()").fetchall()[0][0]  # duckdb 2: fetchone leaves the result open


def store_corpus(warehouse: Warehouse, corpus) -> None:
    """Documents are upserted by doc_id; coverage is replaced per source file."""
    with warehouse.connect() as con:
        warehouse.upsert(con, "documents", corpus.documents)
        warehouse.upsert(con, "coverage", corpus.coverage)


def store_codebook(warehouse: Warehouse, codebook, prompt) -> None:
    import json

    with warehouse.connect() as con:
        warehouse.upsert(con, "prompt_signatures", pl.DataFrame([{
            "signature": prompt.signature, "prompt_version": prompt.prompt_version,
            "system_message": prompt.system_message,
            "response_schema": json.dumps(prompt.schema, ensure_ascii=False),
        }]))
        warehouse.upsert(con, "codebooks", pl.DataFrame([{
            "codebook_hash": codebook.content_hash, "name": codebook.name,
            "version": codebook.version, "signature": prompt.signature, "path": codebook.source,
            "content": Path(codebook.source).read_text(encoding="utf-8") if Path(codebook.source).is_file() else "",
        }]))
