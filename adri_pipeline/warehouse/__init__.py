"""The one DuckDB access layer: short write connections, batched writes, an analyst snapshot.

DuckDB allows one writer per file and an open read-only session blocks every writer, so analysts
never open the writer's file: they read `<name>_snapshot.duckdb`, republished atomically after each
run that writes (docs/classification.md).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Iterator

import duckdb
import polars as pl
import psutil

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


def migrate(con) -> list[int]:
    """Apply the migrations this file has not had yet, each in its own transaction, and record them.
    Every one is written to be safe on a warehouse made before migrations were recorded. Returns the
    versions applied."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name VARCHAR, "
                "applied_at TIMESTAMP DEFAULT current_timestamp)")
    applied = {row[0] for row in con.execute(f"SELECT version FROM {MIGRATIONS_TABLE}").fetchall()}
    done = []
    for version, name, statements in migrations():
        if version in applied:
            continue
        con.execute("BEGIN")
        try:
            con.execute(statements)
            con.execute(f"INSERT INTO {MIGRATIONS_TABLE} (version, name) VALUES (?, ?)", [version, name])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        done.append(version)
    return done


class WarehouseLocked(AdriError, RuntimeError):
    """Another process holds the writer's file; the message says what to do."""


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

    def existing(self) -> "Warehouse":
        """This warehouse, for a command that only reads: a path with no warehouse is an error, never
        an empty warehouse created there."""
        if not self.path.exists():
            raise WarehouseMissing(f"{self.path}: no warehouse here; classify first, or check --warehouse "
                                   "(ADRI_WAREHOUSE)")
        return self

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A write connection that is always closed, even when the body raises."""
        if not self.path.exists():
            self._create()
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                con = duckdb.connect(str(self.path))
                break
            except duckdb.IOException as exc:
                if any(sign in str(exc) for sign in ("not a valid DuckDB database", "Could not read enough bytes")):
                    raise WarehouseDamaged(
                        f"{self.path} is not a DuckDB database (a process killed while creating it, before "
                        "creation was made atomic, can leave such a file): move it aside and run again; "
                        "nothing else is touched") from None
                if "lock" not in str(exc).lower():
                    raise
                if time.monotonic() > deadline:
                    raise WarehouseLocked(_lock_message(self.path, str(exc), self.lock_timeout_s)) from None
                time.sleep(0.2)
        try:
            with interrupts_given_back():
                if self._schema_ready != self._file_identity():
                    migrate(con)
                    self._schema_ready = self._file_identity()
                yield con
        finally:
            con.close()

    def replace_rows(self, con, table: str, frame: pl.DataFrame, where: str = "", params=()) -> None:
        """Delete the rows matching `where` (all rows if empty) and insert `frame`, in one transaction."""
        con.execute("BEGIN")
        try:
            con.execute(f"DELETE FROM {table}" + (f" WHERE {where}" if where else ""), list(params))
            self._insert(con, table, frame)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise

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
            raise WarehouseSchemaError(f"table {table} has no column(s) {undeclared}: declare them in a new "
                                       f"migration ({SQL_FOLDER / 'migrations'})")
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
        (+440 MB at 20,000 documents, issue 23) and took twice as long."""
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
    return (f"{path}: {holder} holds the warehouse's writer lock (waited {waited_s:g} s). DuckDB allows one "
            "writer per file: wait for that run to finish or stop it, or classify into another warehouse "
            "(--warehouse). If it is an analyst's session on this file, ask them to open the snapshot "
            f"{path.with_name(path.stem + '_snapshot.duckdb')} instead.")


def _quoted(identifier: str) -> str:
    """An identifier DuckDB cannot take as a parameter (the database name comes from the file's name)."""
    return '"' + identifier.replace('"', '""') + '"'


def _current_database(con) -> str:
    return con.execute("SELECT current_database()").fetchall()[0][0]  # duckdb 2: fetchone leaves the result open


class DocumentClash(AdriError, ValueError):
    """A document id already stored with another title or abstract, from another file."""


STORE_SLICE_ROWS = 10_000


def store_corpus(warehouse: Warehouse, corpus, replace: bool = False, files: pl.DataFrame | None = None) -> list[str]:
    """Documents are upserted by doc_id; coverage is replaced per source file; `files` (the files'
    fingerprints, see corpus_files) recorded with them. An id already stored with a different text stops
    the load naming both files, unless `replace`; returns what was replaced."""
    with warehouse.connect() as con:
        con.register("_incoming", corpus.documents)
        clashes = con.execute(sql("document_clashes")).fetchall()
        con.unregister("_incoming")
        if clashes and not replace:
            doc_id, old_source, old_line, new_source, new_line = clashes[0]
            raise DocumentClash(
                f"{new_source}: line {new_line}: document id {doc_id!r} is already stored from {old_source} "
                f"line {old_line} with a different title or abstract ({len(clashes)} such id(s)); "
                "rename the ids, or pass --replace-documents to overwrite the stored text")
        # a statement's rows stay in DuckDB's memory until it commits: 100,000 documents at once took
        # the process to 2.7 GB; slices keep it near 1.5 GB. The files' fingerprints go last, so a run
        # killed midway parses and stores the corpus again.
        for part in corpus.documents.iter_slices(STORE_SLICE_ROWS):
            warehouse.upsert(con, "documents", part)
        con.execute("BEGIN")
        try:
            warehouse.upsert(con, "coverage", corpus.coverage)
            if clashes:  # the files whose ids were taken over no longer read back whole
                con.execute(sql("corpus_files_forget"), {"sources": sorted({row[1] for row in clashes})})
            if files is not None:
                warehouse.upsert(con, "corpus_files", files)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return [row[0] for row in clashes]


def corpus_files(warehouse: Warehouse, sources: list[str]) -> dict[str, dict]:
    """The stored fingerprint (size, sha256, options, documents) of each of `sources` that has one."""
    if not warehouse.path.exists():
        return {}
    rows = warehouse.query(sql("corpus_files"), {"sources": sources})
    return {row["source"]: row for row in rows.iter_rows(named=True)}


def stored_corpus(warehouse: Warehouse, sources: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(documents, coverage) of the given files as stored, in the order loading them gives."""
    return (warehouse.query(sql("documents_of_sources"), {"sources": sources}),
            warehouse.query(sql("coverage_of_sources"), {"sources": sources}))


def read_documents(warehouse: Warehouse, doc_ids: list[str] | None = None) -> pl.DataFrame:
    """Stored documents, all of them or the given ids in their order (unknown ids left out)."""
    if doc_ids is None:
        return warehouse.query(sql("documents"))
    frame = warehouse.query(sql("documents_by_id"), {"doc_ids": doc_ids})
    order = pl.DataFrame({"doc_id": doc_ids, "_order": range(len(doc_ids))},
                         schema={"doc_id": pl.String, "_order": pl.Int64})
    return frame.join(order, on="doc_id").sort("_order").drop("_order")


def store_results(warehouse: Warehouse, values: pl.DataFrame, documents: pl.DataFrame, model: str,
                  codebook_hash: str, doc_ids: list[str] | None = None) -> None:
    """Replace the (model, codebook) rows of the given documents (all of them when None), never others:
    results accumulate across corpus files and runs."""
    where, params = "model = ? AND codebook_hash = ?", [model, codebook_hash]
    if doc_ids is not None:
        where, params = where + " AND list_contains(?, doc_id)", params + [doc_ids]
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "classification_values", values, where, params)
        warehouse.replace_rows(con, "classification_documents", documents, where, params)


def read_results(warehouse: Warehouse, model: str, codebook_hash: str) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """(values, documents, documents in the warehouse without an answer) for one (model, codebook)."""
    params = {"model": model, "codebook_hash": codebook_hash}
    values = warehouse.query(sql("result_values"), params)
    documents = warehouse.query(sql("result_documents"), params)
    pending = warehouse.query(sql("pending_documents"), params)["n"][0]
    return values, documents, int(pending)


def result_keys(warehouse: Warehouse, model: str, codebook_hash: str) -> dict[str, str]:
    """doc id -> the cache key its stored results for (model, codebook) were built from."""
    return dict(warehouse.query(sql("result_keys"), {"model": model, "codebook_hash": codebook_hash}).rows())


def store_figures(warehouse: Warehouse, figures: pl.DataFrame, model: str, codebook_hash: str) -> None:
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "classification_figures", figures, "model = ? AND codebook_hash = ?",
                               [model, codebook_hash])


def store_failures(warehouse: Warehouse, answered: list[str], failed: list[tuple[str, str]], model: str,
                   signature: str, run_id: str) -> None:
    """Documents with no answer that follows the codebook, with the reason; answered ones leave the list."""
    with warehouse.connect() as con:
        con.execute(sql("failures_forget"), {"model": model, "signature": signature,
                                             "doc_ids": answered + [doc_id for doc_id, _ in failed]})
        if failed:
            con.executemany(sql("failures_insert"),
                            [(doc_id, model, signature, reason, run_id) for doc_id, reason in dict(failed).items()])


def record_run(warehouse: Warehouse, run: dict) -> None:
    """One row per classification run: the backend it resolved once, its counts and figures."""
    with warehouse.connect() as con:
        warehouse.upsert(con, "classification_runs", pl.DataFrame([run]))


def last_run(warehouse: Warehouse, model: str | None = None) -> dict | None:
    """The latest classification run that resolved a backend (of `model`, when given): downstream
    assets use its model."""
    frame = warehouse.query(sql("last_run")) if model is None else warehouse.query(sql("last_run_of_model"),
                                                                                   {"model": model})
    return frame.row(0, named=True) if frame.height else None


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


def store_shadow_log(warehouse: Warehouse, source: str, rows: pl.DataFrame, quarantine: pl.DataFrame) -> None:
    """Replace this log's rows and quarantined lines, even with nothing valid left (no stale rows)."""
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "shadow_log", rows, "source = ?", [source])
        warehouse.replace_rows(con, "shadow_quarantine", quarantine, "source = ?", [source])


def store_mirror_evaluations(warehouse: Warehouse, log: str, rows: pl.DataFrame) -> None:
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "mirror_evaluations", rows, "log = ?", [log])


def result_sets(warehouse: Warehouse) -> list[dict]:
    """Each (model, codebook) the warehouse holds results for, with its document count."""
    return warehouse.query(sql("result_sets")).to_dicts()


def read_figures(warehouse: Warehouse, model: str, codebook_hash: str) -> pl.DataFrame:
    return warehouse.query(sql("figures"), {"model": model, "codebook_hash": codebook_hash})


def read_mirror_evaluations(warehouse: Warehouse) -> pl.DataFrame:
    return warehouse.query(sql("mirror_evaluations"))


# -- ledger (cache.py decides what goes in; this is how) ----------------------------------------

def _rows_by_key(warehouse: Warehouse, table: str, key: str, columns: list[str], keys: list[str],
                 where: str = "", params=()) -> list[tuple]:
    """`columns` of the rows whose `key` is among `keys` (joined against the keys as a frame: thousands
    of keys stay one query)."""
    if not keys:
        return []
    with warehouse.connect() as con:
        con.register("_wanted", pl.DataFrame({key: keys}, schema={key: pl.String}))
        try:
            return con.execute(f"SELECT {', '.join(columns)} FROM {table} JOIN _wanted USING ({key})"
                               + (f" WHERE {where}" if where else ""), list(params)).fetchall()
        finally:
            con.unregister("_wanted")


def ledger_select(warehouse: Warehouse, columns: list[str], keys: list[str]) -> list[tuple]:
    """`columns` of the ledger rows whose cache_key is among `keys`."""
    return _rows_by_key(warehouse, "ledger", "cache_key", columns, keys)


@contextmanager
def ledger_writer(warehouse: Warehouse, columns: list[str]) -> Iterator:
    """One connection for the run; every commit(*records) is one statement, so one transaction: all of
    its rows are stored or none. DuckDB's cost is per statement (~5 ms here, whatever the rows): a
    run committing answers one by one was capped near 125 documents/s (issue 23's profile)."""
    head = f"INSERT OR REPLACE INTO ledger ({', '.join(columns)}) VALUES "
    row = f"({', '.join('?' for _ in columns)})"
    with warehouse.connect() as con:
        def commit(*records: dict) -> None:
            if not records:
                return
            with interrupts_given_back():  # the run's connection stays open: translate at each commit
                con.execute(head + ", ".join(row for _ in records), [r[c] for r in records for c in columns])

        yield commit


# -- named reads for checks, agreement and reports ---------------------------------------------

# -- document vectors (coders.py decides what and when; this is how) -------------------------------

VECTOR_COLUMNS = ["vector_key", "encoder", "doc_id", "spans", "dim", "document", "windows"]


def read_vectors(warehouse: Warehouse, keys: list[str], encoder: str) -> list[tuple]:
    """Cached vectors (in VECTOR_COLUMNS order) of the given content keys for this encoder."""
    return _rows_by_key(warehouse, "document_vectors", "vector_key", VECTOR_COLUMNS, keys, "encoder = ?", [encoder])


def store_vectors(warehouse: Warehouse, rows: list[tuple]) -> None:
    if rows:
        with warehouse.connect() as con:
            con.executemany(f"INSERT OR REPLACE INTO document_vectors ({', '.join(VECTOR_COLUMNS)}) "
                            f"VALUES ({', '.join('?' for _ in VECTOR_COLUMNS)})", rows)


def publish_results_wide(warehouse: Warehouse, variables: list[str]) -> None:
    """(Re)create the `results_wide` view with one column per variable of the codebook in use."""
    literals = ", ".join("'" + name.replace("'", "''") + "'" for name in variables)
    with warehouse.connect() as con:
        con.execute(sql("results_wide").replace("{variables}", literals))


def read_values(warehouse: Warehouse, codebook_hash: str) -> pl.DataFrame:
    """Every model's `classification_values` for one codebook."""
    return warehouse.query(sql("values_for_codebook"), {"codebook_hash": codebook_hash})


def evidence_audit_shares(warehouse: Warehouse, codebook_hash: str) -> pl.DataFrame:
    """Literal / approximate / absent shares among quoted answers (ADR 0011's definition, the one
    `classification_figures` uses) and waived answers counted apart, per (model, codebook, variable)."""
    return warehouse.query(sql("evidence_audit_shares"), {"codebook_hash": codebook_hash})


def exclusions(warehouse: Warehouse, model: str, signature: str) -> dict[str, int]:
    """{no_abstract, failed}: documents findings leave out, and why."""
    return warehouse.query(sql("exclusions"), {"model": model, "signature": signature}).row(0, named=True)


def coverage_totals(warehouse: Warehouse) -> tuple[int, int]:
    """(documents included, rows read) over every corpus file loaded."""
    row = warehouse.query(sql("coverage_totals")).row(0)
    return int(row[0]), int(row[1])


# -- content-hash IO manager and routing tables --------------------------------------------------

def store_versioned_table(warehouse: Warehouse, table: str, frame: pl.DataFrame, digest: str) -> bool:
    """Rewrite the declared `table` only when its content hash changed; returns whether it was rewritten."""
    with warehouse.connect() as con:
        if con.execute(sql("content_hash"), {"asset": table}).fetchall() == [(digest,)]:
            return False
        warehouse.replace_rows(con, table, frame)
        con.execute(sql("content_hash_record"), {"asset": table, "content_hash": digest})
        return True


def read_table(warehouse: Warehouse, table: str) -> pl.DataFrame:
    return warehouse.query(f"SELECT * FROM {table}")


def store_routing_tables(warehouse: Warehouse, dataset: str, frames: dict[str, pl.DataFrame]) -> None:
    """routing_examples / routing_predictions / routing_metrics: this dataset's rows replaced."""
    with warehouse.connect() as con:
        for table, frame in frames.items():
            warehouse.replace_rows(con, table, frame, "dataset = ?", [dataset])
