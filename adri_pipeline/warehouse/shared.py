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

import logging
import os
import socket
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import polars as pl
import psycopg
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from adri_pipeline.config import DEFAULT_REQUEST_TIMEOUT_S, lease_for
from adri_pipeline.errors import AdriError
from adri_pipeline.warehouse.connection import (
    MigrationDialect,
    Warehouse,
    interrupts_given_back,
    migrate,
    sql,
    transaction,
)

log = logging.getLogger(__name__)

POSTGRES_FOLDER = Path(__file__).parent / "postgres"
POSTGRES = MigrationDialect(POSTGRES_FOLDER, "TIMESTAMPTZ DEFAULT now()", "%s", lambda con: con.transaction())
MIGRATION_LOCK = 0x0AD1_0011  # pg_advisory_xact_lock key: runs starting together migrate one at a time
PULL_SLICE_ROWS = 20_000
DOCUMENT_COLUMNS = ("doc_id", "title", "abstract", "text", "text_language", "year", "doi", "source", "line")
RUN_COLUMNS = (
    "run_id",
    "origin",
    "started_at",
    "finished_at",
    "backend",
    "model",
    "model_digest",
    "params",
    "codebook_hash",
    "signature",
    "selected",
    "cached",
    "classified",
    "failed",
    "model_calls",
    "stopped",
    "figures",
)


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
    retry=retry_if_exception_type(psycopg.OperationalError),
    stop=stop_after_attempt(4),
    wait=wait_exponential(multiplier=0.5, max=8),
    reraise=True,
)


class SharedLedger:
    """The ledger, documents, runs, failures and claims in PostgreSQL. `known`, `claims` and `writer`
    are the ledger's operations a run needs, as on `classification.ledger.Ledger`."""

    def __init__(self, url: str, lease_s: float = lease_for(DEFAULT_REQUEST_TIMEOUT_S)):
        self.url = url
        self.lease_s = lease_s  # how long a claim holds unrenewed (Settings.lease_s)
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
        """One connection for the run; every commit(*records) is one transaction, which also drops the
        claims on the keys it answers (`Claims`). A connection lost mid-commit is opened again and the
        group sent again: a key already committed is left as it is (ON CONFLICT DO NOTHING), so nothing
        is stored twice."""
        statement = pg_sql("ledger_insert").format(
            columns=", ".join(columns), placeholders=", ".join("%s" for _ in columns)
        )
        held = _HeldConnection(self.url)

        def commit(*records: dict) -> None:
            if records:
                rows = [tuple(r[c] for c in columns) for r in records]
                keys = [r["cache_key"] for r in records]

                def send(cur) -> None:
                    cur.executemany(statement, rows)
                    cur.execute(pg_sql("claims_settled"), {"keys": keys})

                with interrupts_given_back():
                    held.run(send)

        with self.connect():  # the schema, and a clear error if the server is not there
            pass
        try:
            yield commit
        finally:
            held.close()

    @contextmanager
    def claims(self) -> Iterator["Claims"]:
        """This worker's claims for the length of a run; whatever it still holds when the run ends
        (documents it never sent, answers a stop left uncommitted) is let go on the way out."""
        with self.connect():  # the schema, and a clear error if the server is not there
            pass
        claims = Claims(self, _worker_name())
        try:
            yield claims
        finally:
            claims.close()

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
            columns=", ".join(columns),
            placeholders=", ".join("%s" for _ in columns),
            updates=", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c != "run_id"),
        )
        with self.connect() as con, con.transaction():
            con.execute(statement, [run[c] for c in columns])

    def store_failures(
        self, answered: list[str], failed: list[tuple[str, str]], model: str, signature: str, run_id: str
    ) -> None:
        with self.connect() as con, con.transaction(), con.cursor() as cur:
            cur.execute(
                pg_sql("failures_forget"),
                {"model": model, "signature": signature, "doc_ids": answered + [doc_id for doc_id, _ in failed]},
            )
            if failed:
                cur.executemany(
                    pg_sql("failures_insert"),
                    [(doc_id, model, signature, reason, run_id) for doc_id, reason in dict(failed).items()],
                )

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
                runs = pl.DataFrame(
                    pg.execute(pg_sql("runs_all")).fetchall(),
                    schema=list(RUN_COLUMNS),
                    orient="row",
                    infer_schema_length=None,
                )
                failures = pl.DataFrame(
                    pg.execute(pg_sql("failures_all")).fetchall(),
                    orient="row",
                    schema=["doc_id", "model", "signature", "reason", "run_id", "failed_at"],
                    infer_schema_length=None,
                )
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
                        con.execute(
                            sql("shared_pull_record"),
                            {"ledger": self.name, "horizon": horizon, "rows_pulled": len(pulled)},
                        )
        return pulled


class _HeldConnection:
    """One connection kept for a run's many short transactions, opened again when it is lost: a
    transaction cut by a lost connection is run again whole on a new one (`_connection_errors`)."""

    def __init__(self, url: str):
        self.url = url
        self.con: psycopg.Connection | None = None

    @_connection_errors
    def run(self, work):
        """`work(cursor)` in one transaction; what it returns."""
        if self.con is None or self.con.closed or self.con.broken:
            self.con = _connection_errors(psycopg.connect)(self.url, connect_timeout=10)
        try:
            with self.con.transaction(), self.con.cursor() as cur:
                return work(cur)
        except psycopg.OperationalError:
            self.con.close()
            raise

    def close(self) -> None:
        if self.con is not None:
            self.con.close()


def _worker_name() -> str:
    """Who holds a claim, as `SELECT * FROM ledger_claims` shows it: machine, process, and a run of its own."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Claims:
    """One worker's leases on documents of the shared ledger, by cache key: a worker claims a document
    before it asks the model, so two runs over the same shards (a retry that overlaps the run it
    retries, or a second worker) ask each document once.

    A claims table with an expiry, rather than PostgreSQL's own locks. A claim has to outlive a
    transaction: a document is at the model for seconds to minutes, and `SELECT … FOR UPDATE SKIP
    LOCKED` holds a row only while its transaction stays open, which would be one open transaction
    per document in flight, holding back the pull's horizon (pull_horizon.sql) all that time. An
    advisory lock lives as long as its session: the documents of a worker whose machine vanished stay
    locked until TCP gives up on the connection (two hours by default on Linux), and a connection
    opened again after a network error drops every lock while the worker still asks. A row with
    `expires_at` is released by time, on the database's clock (no two machines' clocks compared),
    whatever connection renews it, and shows who holds what (`SELECT * FROM ledger_claims`).

    A live worker renews its claims every third of the lease; a worker killed with SIGKILL leaves its
    claims, which another takes over once they expire. An answer committed drops its claim in the
    same transaction; a claim that expires under a live worker (the database unreachable for a whole
    lease) costs at most one more request for that document, never an answer: the ledger keeps the
    first one committed."""

    def __init__(self, ledger: SharedLedger, worker: str):
        self.ledger, self.worker, self.lease_s = ledger, worker, float(ledger.lease_s)
        self.renew_every_s = self.lease_s / 3
        self.poll_s = min(5.0, max(0.2, self.lease_s / 10))  # how often to look again at others' claims
        self._connection = _HeldConnection(ledger.url)
        self._renewed = time.monotonic()

    def take(self, wanted: list[tuple[str, str]]) -> tuple[set[str], set[str]]:
        """Claim these (cache key, doc id): (the keys this worker now holds, the keys already answered
        in the ledger); the others are held by live workers. Committed before the model is asked."""
        keys = [key for key, _ in wanted]

        def claim(cur) -> tuple[set[str], set[str]]:
            cur.execute(
                pg_sql("claims_take"),
                {
                    "worker": self.worker,
                    "lease_s": self.lease_s,
                    "keys": keys,
                    "doc_ids": [doc_id for _, doc_id in wanted],
                },
            )
            claimed = {row[0] for row in cur.fetchall()}
            # a statement of its own, so a snapshot of its own: it sees an answer committed while
            # claims_take waited on that answer's claim
            answered = {row[0] for row in cur.execute(pg_sql("ledger_known"), {"keys": keys}).fetchall()}
            if claimed & answered:
                cur.execute(pg_sql("claims_release"), {"worker": self.worker, "keys": list(claimed & answered)})
            return claimed - answered, answered

        return self._run(claim) if keys else (set(), set())

    def release(self, keys: list[str]) -> None:
        """Let these keys go now (their documents failed or were not sent): another worker may try them."""
        if keys:
            self._run(lambda cur: cur.execute(pg_sql("claims_release"), {"worker": self.worker, "keys": keys}))

    def renew(self) -> None:
        """Push the expiry of every claim held one lease further, at most every third of a lease. A
        server out of reach is said and tried again next time, the run goes on: a claim that expires
        meanwhile costs another run a request at most, and the answers' commits say whether the ledger
        is really gone."""
        if time.monotonic() - self._renewed < self.renew_every_s:
            return
        try:
            self._run(lambda cur: cur.execute(pg_sql("claims_renew"), {"worker": self.worker, "lease_s": self.lease_s}))
            self._renewed = time.monotonic()
        except SharedLedgerUnreachable as exc:
            log.warning("%s; the claims of %s were not renewed, trying again", exc, self.worker)

    def close(self) -> None:
        """Every claim still held let go; if the server is gone by then, they expire by themselves."""
        try:
            self._run(lambda cur: cur.execute(pg_sql("claims_release_all"), {"worker": self.worker}))
        except SharedLedgerUnreachable as exc:
            log.warning("%s; the claims of %s expire within %g s", exc, self.worker, self.lease_s)
        finally:
            self._connection.close()

    def _run(self, work):
        try:
            with interrupts_given_back():
                return self._connection.run(work)
        except psycopg.OperationalError as exc:
            raise SharedLedgerUnreachable(
                f"shared ledger {self.ledger.name} (ADRI_LEDGER_URL): {str(exc).strip()}"
            ) from None


def _naive_utc(frame: pl.DataFrame) -> pl.DataFrame:
    """PostgreSQL's TIMESTAMPTZ as the UTC wall time DuckDB's TIMESTAMP columns hold."""
    return frame.with_columns(
        pl.col(c).dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        for c, dtype in frame.schema.items()
        if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None
    )
