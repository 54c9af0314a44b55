"""Connections and transactions to the warehouse file: short write connections that are always
closed, the schema applied from migrations/, one `transaction()`, the generic row moves, the lock
wait, and the analyst snapshot."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import polars as pl
import psutil
import tenacity

from adri_pipeline import faults
from adri_pipeline.errors import AdriError
from adri_pipeline.stopping import interrupt_from

SQL_FOLDER = Path(__file__).parent


MIGRATIONS_TABLE = "schema_migrations"


@cache
def sql(name: str, folder: Path = SQL_FOLDER) -> str:
    """A named query from `<folder>/queries/<name>.sql` (the DuckDB one, or the shared ledger's
    `postgres/`): every statement with a meaning of its own lives there; the generic row moves below
    (replace, upsert) are built from table names."""
    return (folder / "queries" / f"{name}.sql").read_text(encoding="utf-8")


@cache
def migrations(folder: Path = SQL_FOLDER) -> tuple[tuple[int, str, str], ...]:
    """(version, name, statements) of `<folder>/migrations/NNNN_name.sql`, in order: the schema, declared."""
    found = []
    for path in sorted((folder / "migrations").glob("*.sql")):
        version, _, name = path.stem.partition("_")
        found.append((int(version), name, path.read_text(encoding="utf-8")))
    return tuple(found)


@contextmanager
def transaction(con) -> Iterator[None]:
    """BEGIN, the body, COMMIT; ROLLBACK when anything in it raises (an interrupt included), and the
    error goes on. DuckDB and psycopg connections alike. A Ctrl+C that lands as COMMIT returns finds
    the transaction ended: its ROLLBACK fails ("no transaction is active"), and the interrupt, not
    that, is what goes on (seen in CI: the TransactionException hid the interrupt)."""
    con.execute("BEGIN")
    try:
        yield
        con.execute("COMMIT")
    except BaseException as error:
        try:
            con.execute("ROLLBACK")
        except Exception as rollback_error:  # the transaction had ended: committed, or ended by the error
            error.add_note(f"ROLLBACK after it: {rollback_error}")
        raise


@dataclass(frozen=True)
class MigrationDialect:
    """What recording migrations needs to know of a database: where its migrations are, how its
    `applied_at` column is typed, its parameter placeholder, and what wraps one migration."""

    folder: Path
    applied_at: str
    placeholder: str
    step: Callable  # con -> the context manager one migration runs in


DUCKDB = MigrationDialect(SQL_FOLDER, "TIMESTAMP DEFAULT current_timestamp", "?", transaction)


def migrate(con, dialect: MigrationDialect = DUCKDB) -> list[int]:
    """Apply the migrations this database has not had yet, each in its own `dialect.step`, and record
    them: the one runner for the DuckDB warehouse and the shared ledger's PostgreSQL. Every one is
    written to be safe on a database made before migrations were recorded. Returns the versions applied."""
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name VARCHAR, "
        f"applied_at {dialect.applied_at})"
    )
    applied = {row[0] for row in con.execute(f"SELECT version FROM {MIGRATIONS_TABLE}").fetchall()}
    done = []
    for version, name, statements in migrations(dialect.folder):
        if version in applied:
            continue
        with dialect.step(con):
            con.execute(statements)
            con.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (version, name) VALUES ({dialect.placeholder}, {dialect.placeholder})",
                [version, name],
            )
        done.append(version)
    return done


class WarehouseLocked(AdriError, RuntimeError):
    """Another process holds the writer's file; the message says what to do."""


class WarehouseInUse(AdriError, RuntimeError):
    """Another process is running a classification into this warehouse; the message names it."""


# path -> (open claim file, how many nested claims of this process hold it)
_CLAIMS: dict[Path, list] = {}
_CLAIMS_LOCK = threading.Lock()


class WarehouseDamaged(AdriError, RuntimeError):
    """The warehouse path holds a file DuckDB cannot open."""


class WarehouseMissing(AdriError, FileNotFoundError):
    """A command that only reads was pointed at a warehouse that is not there (a mistyped path)."""


class WarehouseSchemaError(AdriError, RuntimeError):
    """Rows for a column the migrations do not declare."""


@contextmanager
def interrupts_given_back() -> Iterator[None]:
    """A Ctrl+C or SIGTERM that DuckDB swallowed inside a query comes out as the KeyboardInterrupt it
    was, so a run stops the way it does anywhere else (see stopping.py); DuckDB rolled the interrupted
    statement back."""
    try:
        yield
    except Exception as exc:
        interrupt = interrupt_from(exc)
        if interrupt is None:
            raise
        raise interrupt from exc


class Warehouse:
    def __init__(self, path: str | Path, lock_timeout_s: float = 10.0):
        self.path = Path(path)
        self.lock_timeout_s = lock_timeout_s
        self._schema_ready: tuple | None = None  # the file the schema was last applied to

    def _file_identity(self) -> tuple | None:
        """(inode, device) of the writer's file: a file replaced under us gets the schema again."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_dev

    @property
    def snapshot_path(self) -> Path:
        return self.path.with_name(self.path.stem + "_snapshot.duckdb")

    def _create(self) -> None:
        """Create the file whole or not at all: DuckDB writes a new file's headers in several steps, and a
        process killed among them leaves a file no later run can open. The schema is built under a
        temporary name and linked into place; `link` fails if another process got there first, and that
        file is kept."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        prefix = self.path.name + ".creating"
        for leftover in self.path.parent.glob(prefix + "*"):  # the file and its .wal
            pid = leftover.name.removeprefix(prefix).split(".")[0]
            if pid.isdigit() and not psutil.pid_exists(int(pid)):
                leftover.unlink(missing_ok=True)
        tmp = self.path.with_name(f"{prefix}{os.getpid()}")
        tmp.unlink(missing_ok=True)
        with duckdb.connect(str(tmp)) as con:
            migrate(con)
        faults.point("creating_warehouse")
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: a rename, unless a file got there first
            if not self.path.exists():
                os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    @contextmanager
    def running(self, what: str) -> Iterator[None]:
        """This process runs `what` (a classification) into the warehouse from here to the end of the
        block. DuckDB's own lock is taken per connection, so two runs interleave their short
        connections, both ask the model for the same documents and one dies later on the lock; a
        second run instead refuses here, at once and before any request, naming the run that holds
        it. An advisory lock (flock) on `<warehouse>.run` the kernel releases however the holder
        ends (kill -9 too); nested blocks of one process share it."""
        claim = self.path.with_name(self.path.name + ".run").resolve()
        with _CLAIMS_LOCK:
            held = _CLAIMS.get(claim)
            if held is None:
                claim.parent.mkdir(parents=True, exist_ok=True)
                handle = open(claim, "a+", encoding="utf-8")
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.seek(0)
                    holder = handle.read()
                    handle.close()
                    raise WarehouseInUse(_in_use_message(self.path, holder)) from None
                handle.truncate(0)
                handle.write(
                    json.dumps(
                        {
                            "pid": os.getpid(),
                            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                            "what": what,
                            "command": " ".join(sys.argv)[:200],
                        }
                    )
                )
                handle.flush()
                held = _CLAIMS[claim] = [handle, 0]
            held[1] += 1
        try:
            yield
        finally:
            with _CLAIMS_LOCK:
                held[1] -= 1
                if held[1] == 0:
                    del _CLAIMS[claim]
                    held[0].truncate(0)
                    held[0].close()  # closing the file releases the lock

    def existing(self) -> "Warehouse":
        """This warehouse, for a command that only reads: a path with no warehouse is an error, never
        an empty warehouse created there."""
        if not self.path.exists():
            raise WarehouseMissing(
                f"{self.path}: no warehouse here; classify first, or check --warehouse (ADRI_WAREHOUSE)"
            )
        return self

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A write connection that is always closed, even when the body raises."""
        if not self.path.exists():
            with interrupts_given_back():  # a Ctrl+C while the schema is built is one too
                self._create()
        con = self._open()
        try:
            with interrupts_given_back():
                if self._schema_ready != self._file_identity():
                    migrate(con)
                    self._schema_ready = self._file_identity()
                yield con
        finally:
            con.close()

    def _open(self) -> duckdb.DuckDBPyConnection:
        """The file opened for writing, waiting up to `lock_timeout_s` while another process holds it
        (tenacity, every 0.2 s); a damaged file or a lock that stays is said plainly."""
        try:
            for attempt in tenacity.Retrying(
                stop=tenacity.stop_after_delay(self.lock_timeout_s),
                wait=tenacity.wait_fixed(0.2),
                reraise=True,
                retry=tenacity.retry_if_exception(_is_lock),
            ):
                with attempt:
                    return duckdb.connect(str(self.path))
        except duckdb.IOException as exc:
            if any(sign in str(exc) for sign in ("not a valid DuckDB database", "Could not read enough bytes")):
                raise WarehouseDamaged(
                    f"{self.path} is not a DuckDB database (a process killed while creating it can leave such a "
                    "file): move it aside and run again; nothing else is touched"
                ) from None
            if _is_lock(exc):
                raise WarehouseLocked(_lock_message(self.path, str(exc), self.lock_timeout_s)) from None
            raise

    def replace_rows(self, con, table: str, frame: pl.DataFrame, where: str = "", params=()) -> None:
        """Delete the rows matching `where` (all rows if empty) and insert `frame`, in one transaction."""
        with transaction(con):
            con.execute(f"DELETE FROM {table}" + (f" WHERE {where}" if where else ""), list(params))
            self._insert(con, table, frame)

    def upsert(self, con, table: str, frame: pl.DataFrame) -> None:
        self._insert(con, table, frame, "INSERT OR REPLACE")

    @staticmethod
    def _insert(con, table: str, frame: pl.DataFrame, verb: str = "INSERT") -> None:
        """`frame`'s columns into the declared `table`, by name; a column the migrations do not declare
        is refused naming it (tables are declared in migrations/, never inferred from a frame)."""
        if not frame.height:
            return
        declared = {row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()}
        if undeclared := [c for c in frame.columns if c not in declared]:
            raise WarehouseSchemaError(
                f"table {table} has no column(s) {undeclared}: declare them in a new "
                f"migration ({SQL_FOLDER / 'migrations'})"
            )
        columns = ", ".join(f'"{c}"' for c in frame.columns)
        con.register("_batch", frame)  # replaced by the next batch if this insert fails
        con.execute(f"{verb} INTO {table} ({columns}) SELECT {columns} FROM _batch")
        con.unregister("_batch")

    def query(self, statement: str, params=()) -> pl.DataFrame:
        """Rows of a statement (usually `sql(name)`); params a list for ?, a dict for $name."""
        with self.connect() as con:
            return con.sql(statement, params=params if isinstance(params, dict) else list(params)).pl()

    def snapshot_is_current(self) -> bool:
        """Whether the analyst snapshot holds the results the warehouse holds: a publish killed midway
        leaves the previous snapshot in place, which a cached rerun must not take for this run's."""
        if not self.snapshot_path.exists():
            return False
        try:
            with duckdb.connect(str(self.snapshot_path), read_only=True) as snapshot:
                published = snapshot.execute(sql("results_digest")).fetchall()
        except duckdb.Error:  # damaged, or made before the results tables: publish again
            return False
        with self.connect() as con:
            return con.execute(sql("results_digest")).fetchall() == published

    def publish_snapshot(self) -> Path:
        """Copy the warehouse to a temporary file and rename it over the snapshot atomically; temporary
        files left by a process killed while publishing are removed. After a CHECKPOINT the file holds
        everything, so the copy is the file's bytes: `COPY FROM DATABASE` held the tables in memory
        (+440 MB at 20,000 documents) and took twice as long."""
        tmp = self.snapshot_path.with_suffix(f".tmp{os.getpid()}")
        for leftover in self.snapshot_path.parent.glob(self.snapshot_path.stem + ".tmp*"):
            pid = leftover.suffix.removeprefix(".tmp").split(".")[0]
            if leftover != tmp and pid.isdigit() and not psutil.pid_exists(int(pid)):
                leftover.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
        with self.connect() as con:
            try:  # everything in the file, then the file's bytes: disk speed, no table held in memory
                con.execute("CHECKPOINT")
                wal = self.path.with_name(self.path.name + ".wal")
                if wal.exists() and wal.stat().st_size:
                    raise duckdb.TransactionException("the checkpoint left a write-ahead log")
                shutil.copyfile(self.path, tmp)
            except duckdb.TransactionException:  # what the file holds is not all: copy the tables
                tmp.unlink(missing_ok=True)
                con.execute("ATTACH ? AS snapshot_tmp", [str(tmp)])  # a path is a value, never pasted into SQL
                try:
                    con.execute(f"COPY FROM DATABASE {_quoted(_current_database(con))} TO snapshot_tmp")
                finally:
                    con.execute("DETACH snapshot_tmp")
        faults.point("during_snapshot")
        os.replace(tmp, self.snapshot_path)
        return self.snapshot_path


def _is_lock(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()


def _lock_message(path: Path, error: str, waited_s: float) -> str:
    """Who holds the writer's lock and what to do, instead of DuckDB's hint to open read-only."""
    match = re.search(r"PID (\d+)", error)
    holder = "another process"
    if match:
        pid = int(match.group(1))
        try:
            command = " ".join(psutil.Process(pid).cmdline()) or psutil.Process(pid).name()
            holder = f"process {pid} ({command[:160]})"
        except psutil.Error:
            holder = f"process {pid}"
    return (
        f"{path}: {holder} holds the warehouse's writer lock (waited {waited_s:g} s). DuckDB allows one "
        "writer per file: wait for that run to finish or stop it, or classify into another warehouse "
        "(--warehouse). If it is an analyst's session on this file, ask them to open the snapshot "
        f"{path.with_name(path.stem + '_snapshot.duckdb')} instead."
    )


def _in_use_message(path: Path, holder: str) -> str:
    try:
        who = json.loads(holder)
        named = f"process {who['pid']}, started {who['started_at']} ({who['what']}: {who['command']})"
    except (ValueError, KeyError, TypeError):
        named = "another process"
    return (
        f"{path}: {named} is writing this warehouse. Nothing was asked of the model and nothing changed. "
        "Wait for that run to end or stop it, or classify into another warehouse (--warehouse)."
    )


def _quoted(identifier: str) -> str:
    """An identifier DuckDB cannot take as a parameter (the database name comes from the file's name)."""
    return '"' + identifier.replace('"', '""') + '"'


def _current_database(con) -> str:
    return con.execute("SELECT current_database()").fetchall()[0][0]  # duckdb 2: fetchone leaves the result open
