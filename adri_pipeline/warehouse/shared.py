"""The shared ledger: PostgreSQL, for many classification runs on many machines at once.

DuckDB allows one writer per file, so runs side by side cannot all commit to it. With a PostgreSQL URL
in the settings (ADRI_LEDGER_URL) each run reads its shards' documents from PostgreSQL and commits its
answers there — the same content-hash keys, the same group commit, the same rule that an answer is
committed before its document leaves the run's in-flight set — and never opens the DuckDB file. The
results, audits and the analyst snapshot are then built into DuckDB, once, from what the shared ledger
holds (`pull_into`). psycopg 3 carries the rows: the pull is a server-side cursor read in slices into
polars frames that DuckDB takes by Arrow, which keeps memory to one slice (SCALING.md has the
figures). The schema is named, versioned SQL like the DuckDB one (`postgres/migrations/`).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import polars as pl
import psycopg
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from adri_pipeline.errors import AdriError
from adri_pipeline.warehouse.connection import (
    MigrationDialect,
    Warehouse,
    interrupts_given_back,
    migrate,
    sql,
    transaction,
)

POSTGRES_FOLDER = Path(__file__).parent / "postgres"
POSTGRES = MigrationDialect(POSTGRES_FOLDER, "TIMESTAMPTZ DEFAULT now()", "%s", lambda con: con.transaction())
MIGRATION_LOCK = 0x0AD1_0011  # pg_advisory_xact_lock key: runs starting together migrate one at a time
PULL_SLICE_ROWS = 20_000
DOCUMENT_COLUMNS = ("doc_id", "title", "abstract", "text", "text_language", "year", "doi", "source", "line")
RUN_COLUMNS = ("run_id", "origin", "started_at", "finished_at", "backend", "model", "model_digest", "params",
               "codebook_hash", "signature", "selected", "cached", "classified", "failed", "model_calls",
               "stopped", "figures")


class SharedLedgerUnreachable(AdriError, RuntimeError):
    """The PostgreSQL server of ADRI_LEDGER_URL does not answer, or refuses the connection."""


def pg_sql(name: str) -> str:
    return sql(name, POSTGRES_FOLDER)


def redacted(url: str) -> str:
    """The URL without its password: what messages and the pull record name."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_connection_errors = retry(
    retry=retry_if_exception_type(psycopg.OperationalError), stop=stop_after_attempt(4),
    wait=wait_exponential(multiplier=0.5, max=8), reraise=True)


class SharedLedger:
    """The ledger, documents, runs and failures in PostgreSQL. `known` and `writer` are the ledger's
    two operations a run needs, as on `classification.ledger.Ledger`."""

    def __init__(self, url: str):
        self.url = url
        self._migrated = False

    @property
    def name(self) -> str:
        return redacted(self.url)

    @contextmanager
    def connect(self) -> Iterator[psycopg.Connection]:
        try:
            con = _connection_errors(psycopg.connect)(self.url, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise SharedLedgerUnreachable(f"shared ledger {self.name} (ADRI_LEDGER_URL): {str(exc).strip()}") from None
        try:
            if not self._migrated:
                self._migrate(con)
                self._migrated = True
            with interrupts_given_back():
                yield con
        finally:
            con.close()

    def _migrate(self, con: psycopg.Connection) -> list[int]:
        """The warehouse's migration runner, under an advisory lock: runs starting together migrate one
        at a time, each migration a savepoint of the one transaction."""
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK])
            return migrate(con, POSTGRES)

    # -- what a run needs ---------------------------------------------------------------------

    def known(self, keys: list[str]) -> set[str]:
        if not keys:
            return set()
        with self.connect() as con:
            return {row[0] for row in con.execute(pg_sql("ledger_known"), {"keys": keys}).fetchall()}

    @contextmanager
    def writer(self, columns: list[str]) -> Iterator:
        """One connection for the run; every commit(*records) is one transaction. A connection lost
        mid-commit is opened again and the group sent again: a key already committed is left as it is
        (ON CONFLICT DO NOTHING), so nothing is stored twice."""
        statement = pg_sql("ledger_insert").format(columns=", ".join(columns),
                                                   placeholders=", ".join("%s" for _ in columns))
        holder: dict = {}

        def fresh() -> psycopg.Connection:
            holder.pop("con", None)
            holder["con"] = _connection_errors(psycopg.connect)(self.url, connect_timeout=10)
            return holder["con"]

        @_connection_errors
        def send(rows: list[tuple]) -> None:
            con = holder.get("con")
            if con is None or con.closed or con.broken:
                con = fresh()
            try:
                with con.transaction(), con.cursor() as cur:
                    cur.executemany(statement, rows)
            except psycopg.OperationalError:
                con.close()
                raise

        def commit(*records: dict) -> None:
            if records:
                with interrupts_given_back():
                    send([tuple(r[c] for c in columns) for r in records])

        with self.connect():  # the schema, and a clear error if the server is not there
            pass
        try:
            yield commit
        finally:
            if holder.get("con") is not None:
                holder["con"].close()

    def documents_of_shards(self, shards: list[str]) -> pl.DataFrame:
        """The stored documents of these shards, in corpus order (file, line)."""
        from adri_pipeline.warehouse.corpus import DOCUMENT_SCHEMA

        with self.connect() as con:
            rows = con.execute(pg_sql("documents_of_shards"), {"shards": shards}).fetchall()
        return pl.DataFrame(rows, schema=DOCUMENT_SCHEMA, orient="row")

    def holds(self, doc_ids: list[str]) -> bool:
        """Whether every one of these documents is stored."""
        with self.connect() as con:
            found = con.execute(pg_sql("documents_held"), {"ids": doc_ids}).fetchone()[0]
        return found == len(set(doc_ids))

    def store_documents(self, documents: pl.DataFrame, shards: list[str]) -> None:
        """Upsert documents by doc_id with their shard (one per row), in one transaction."""
        with self.connect() as con, con.transaction(), con.cursor() as cur:
            cur.execute("CREATE TEMP TABLE incoming_documents (LIKE documents) ON COMMIT DROP")
            with cur.copy(f"COPY incoming_documents (shard, {', '.join(DOCUMENT_COLUMNS)}) FROM STDIN") as copy:
                for shard, row in zip(shards, documents.select(DOCUMENT_COLUMNS).iter_rows()):
                    copy.write_row((shard, *row))
            cur.execute(pg_sql("documents_upsert"))

    def record_run(self, run: dict) -> None:
        columns = [c for c in RUN_COLUMNS if c in run]
        statement = pg_sql("run_upsert").format(
            columns=", ".join(columns), placeholders=", ".join("%s" for _ in columns),
            updates=", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c != "run_id"))
        with self.connect() as con, con.transaction():
            con.execute(statement, [run[c] for c in columns])

    def store_failures(self, answered: list[str], failed: list[tuple[str, str]], model: str, signature: str,
                       run_id: str) -> None:
        with self.connect() as con, con.transaction(), con.cursor() as cur:
            cur.execute(pg_sql("failures_forget"), {"model": model, "signature": signature,
                                                    "doc_ids": answered + [doc_id for doc_id, _ in failed]})
            if failed:
                cur.executemany(pg_sql("failures_insert"),
                                [(doc_id, model, signature, reason, run_id) for doc_id, reason in dict(failed).items()])

    # -- into the analysts' warehouse -----------------------------------------------------------

    def pull_into(self, warehouse: Warehouse, columns: list[str]) -> list[str]:
        """Copy into the DuckDB warehouse what it lacks of the shared ledger (rows committed since the
        last pull), and the runs and failures whole; returns the doc ids of the rows pulled. One
        REPEATABLE READ snapshot on the PostgreSQL side, one transaction on the DuckDB side: a pull
        killed midway stores nothing and the next one starts from the same place."""
        pulled: list[str] = []
        with self.connect() as pg:
            pg.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            with pg.transaction():
                horizon = pg.execute(pg_sql("pull_horizon")).fetchone()[0]
                runs = pl.DataFrame(pg.execute(pg_sql("runs_all")).fetchall(), schema=list(RUN_COLUMNS), orient="row",
                                    infer_schema_length=None)
                failures = pl.DataFrame(pg.execute(pg_sql("failures_all")).fetchall(), orient="row",
                                        schema=["doc_id", "model", "signature", "reason", "run_id", "failed_at"],
                                        infer_schema_length=None)
                with warehouse.connect() as con:
                    previous = con.execute(sql("shared_pull_horizon"), {"ledger": self.name}).fetchall()
                    since = previous[0][0] if previous else "0"
                    with transaction(con):
                        with pg.cursor(name="adri_pull") as cur:
                            cur.execute(pg_sql("ledger_since").format(columns=", ".join(columns)), {"since": since})
                            while rows := cur.fetchmany(PULL_SLICE_ROWS):
                                part = pl.DataFrame(rows, schema=columns, orient="row", infer_schema_length=None)
                                warehouse.upsert(con, "ledger", part)
                                pulled.extend(part["doc_id"].to_list())
                        warehouse.upsert(con, "classification_runs", _naive_utc(runs))
                        con.execute(sql("failures_forget_all"))
                        warehouse.upsert(con, "classification_failures", _naive_utc(failures))
                        con.execute(sql("shared_pull_record"), {"ledger": self.name, "horizon": horizon,
                                                                "rows_pulled": len(pulled)})
        return pulled


def _naive_utc(frame: pl.DataFrame) -> pl.DataFrame:
    """PostgreSQL's TIMESTAMPTZ as the UTC wall time DuckDB's TIMESTAMP columns hold."""
    return frame.with_columns(pl.col(c).dt.convert_time_zone("UTC").dt.replace_time_zone(None)
                              for c, dtype in frame.schema.items()
                              if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None)
