"""The one DuckDB access layer: short write connections, batched writes, an analyst snapshot.

DuckDB allows one writer per file and an open read-only session blocks every writer, so analysts
never open the writer's file: they read `<name>_snapshot.duckdb`, republished atomically after each
run that writes (docs/classification.md).
"""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
import polars as pl
import psutil

from adri_pipeline import faults
from adri_pipeline.errors import AdriError
from adri_pipeline.stopping import interrupt_from

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
CREATE TABLE IF NOT EXISTS classification_runs (
    run_id VARCHAR PRIMARY KEY, origin VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP,
    backend VARCHAR, model VARCHAR, model_digest VARCHAR, params JSON, codebook_hash VARCHAR,
    signature VARCHAR, selected BIGINT, cached BIGINT, classified BIGINT, failed BIGINT,
    model_calls BIGINT, stopped VARCHAR, figures JSON
);
CREATE TABLE IF NOT EXISTS classification_failures (
    doc_id VARCHAR, model VARCHAR, signature VARCHAR, reason VARCHAR, run_id VARCHAR,
    failed_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (doc_id, model, signature)
);
CREATE TABLE IF NOT EXISTS shadow_log (
    decision_point VARCHAR, timestamp VARCHAR, state_hash VARCHAR, rule_decision VARCHAR,
    mirror_decision VARCHAR, probability DOUBLE, latency_ms DOUBLE, mode VARCHAR, used VARCHAR,
    outcome VARCHAR, truth VARCHAR, state JSON, source VARCHAR
);
CREATE TABLE IF NOT EXISTS shadow_quarantine (line BIGINT, error VARCHAR, raw VARCHAR, source VARCHAR);
CREATE TABLE IF NOT EXISTS mirror_evaluations (
    decision_point VARCHAR, log VARCHAR, recommendation VARCHAR, evaluation JSON
);
CREATE TABLE IF NOT EXISTS classification_figures (
    model VARCHAR, codebook_hash VARCHAR, variable VARCHAR, documents BIGINT,
    json_valid_first_try_pct DOUBLE, valid_first_try_pct DOUBLE, retry_pct DOUBLE,
    literal_pct DOUBLE, approximate_pct DOUBLE, absent_pct DOUBLE, waived BIGINT,
    over_20_words BIGINT, seconds_median DOUBLE, seconds_p90 DOUBLE
);
CREATE TABLE IF NOT EXISTS document_vectors (
    vector_key VARCHAR, encoder VARCHAR, doc_id VARCHAR, spans JSON, dim INTEGER,
    document BLOB, windows BLOB, PRIMARY KEY (vector_key, encoder)
);
"""

# Columns added after a table first shipped: applied to existing warehouses on connect.
MIGRATIONS = """
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS json_valid_first_try BOOLEAN;
ALTER TABLE classification_values ADD COLUMN IF NOT EXISTS evidence_field VARCHAR;
ALTER TABLE classification_values ADD COLUMN IF NOT EXISTS evidence_flag VARCHAR;
ALTER TABLE classification_documents ADD COLUMN IF NOT EXISTS json_valid_first_try BOOLEAN;
ALTER TABLE classification_documents ADD COLUMN IF NOT EXISTS source VARCHAR;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS run_id VARCHAR;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS task_id VARCHAR;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS main_model_calls BIGINT;
ALTER TABLE shadow_log ADD COLUMN IF NOT EXISTS exposed_fields VARCHAR;  -- JSON list
"""


class WarehouseLocked(AdriError, RuntimeError):
    """Another process holds the writer's file; the message says what to do."""


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
                if "lock" not in str(exc).lower():
                    raise
                if time.monotonic() > deadline:
                    raise WarehouseLocked(_lock_message(self.path, str(exc), self.lock_timeout_s)) from None
                time.sleep(0.2)
        try:
            with interrupts_given_back():
                if self._schema_ready != self._file_identity():
                    con.execute(SCHEMA)
                    con.execute(MIGRATIONS)
                    self._schema_ready = self._file_identity()
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
        """Copy the warehouse to a temporary file and rename it over the snapshot atomically; temporary
        files left by a process killed while publishing are removed."""
        tmp = self.snapshot_path.with_suffix(f".tmp{os.getpid()}")
        for leftover in self.snapshot_path.parent.glob(self.snapshot_path.stem + ".tmp*"):
            pid = leftover.suffix.removeprefix(".tmp").split(".")[0]
            if leftover != tmp and pid.isdigit() and not psutil.pid_exists(int(pid)):
                leftover.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
        with self.connect() as con:
            con.execute(f"ATTACH '{tmp}' AS snapshot_tmp")
            try:
                con.execute("COPY FROM DATABASE {} TO snapshot_tmp".format(_current_database(con)))
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


def _current_database(con) -> str:
    return con.execute("SELECT current_database()").fetchall()[0][0]  # duckdb 2: fetchone leaves the result open


class DocumentClash(AdriError, ValueError):
    """A document id already stored with another title or abstract, from another file."""


def store_corpus(warehouse: Warehouse, corpus, replace: bool = False) -> list[str]:
    """Documents are upserted by doc_id; coverage is replaced per source file. An id already stored
    with a different text stops the load naming both files, unless `replace`; returns what was
    replaced."""
    with warehouse.connect() as con:
        con.register("_incoming", corpus.documents)
        clashes = con.execute(
            """SELECT i.doc_id, d.source, d.line, i.source, i.line FROM _incoming i JOIN documents d USING (doc_id)
               WHERE d.title IS DISTINCT FROM i.title OR d.abstract IS DISTINCT FROM i.abstract
               ORDER BY i.line""").fetchall()
        con.unregister("_incoming")
        if clashes and not replace:
            doc_id, old_source, old_line, new_source, new_line = clashes[0]
            raise DocumentClash(
                f"{new_source}: line {new_line}: document id {doc_id!r} is already stored from {old_source} "
                f"line {old_line} with a different title or abstract ({len(clashes)} such id(s)); "
                "rename the ids, or pass --replace-documents to overwrite the stored text")
        warehouse.upsert(con, "documents", corpus.documents)
        warehouse.upsert(con, "coverage", corpus.coverage)
    return [row[0] for row in clashes]


def read_documents(warehouse: Warehouse, doc_ids: list[str] | None = None) -> pl.DataFrame:
    """Stored documents, all of them or the given ids in their order (unknown ids left out)."""
    if doc_ids is None:
        return warehouse.query("SELECT * FROM documents ORDER BY source, line")
    frame = warehouse.query("SELECT * FROM documents WHERE list_contains(?, doc_id)", [doc_ids])
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
    params = [model, codebook_hash]
    values = warehouse.query("SELECT * FROM classification_values WHERE model = ? AND codebook_hash = ? "
                             "ORDER BY doc_id, variable", params)
    documents = warehouse.query("SELECT * FROM classification_documents WHERE model = ? AND codebook_hash = ? "
                                "ORDER BY doc_id", params)
    pending = warehouse.query(
        "SELECT count(*) AS n FROM documents WHERE doc_id NOT IN (SELECT doc_id FROM classification_documents "
        "WHERE model = ? AND codebook_hash = ?)", params)["n"][0]
    return values, documents, int(pending)


def store_figures(warehouse: Warehouse, figures: pl.DataFrame, model: str, codebook_hash: str) -> None:
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "classification_figures", figures, "model = ? AND codebook_hash = ?",
                               [model, codebook_hash])


def store_failures(warehouse: Warehouse, answered: list[str], failed: list[tuple[str, str]], model: str,
                   signature: str, run_id: str) -> None:
    """Documents with no answer that follows the codebook, with the reason; answered ones leave the list."""
    with warehouse.connect() as con:
        con.execute("DELETE FROM classification_failures WHERE model = ? AND signature = ? AND list_contains(?, doc_id)",
                    [model, signature, answered + [doc_id for doc_id, _ in failed]])
        if failed:
            con.executemany("INSERT INTO classification_failures (doc_id, model, signature, reason, run_id) "
                            "VALUES (?, ?, ?, ?, ?)",
                            [(doc_id, model, signature, reason, run_id) for doc_id, reason in dict(failed).items()])


def record_run(warehouse: Warehouse, run: dict) -> None:
    """One row per classification run: the backend it resolved once, its counts and figures."""
    with warehouse.connect() as con:
        warehouse.upsert(con, "classification_runs", pl.DataFrame([run]))


def last_run(warehouse: Warehouse) -> dict | None:
    """The latest classification run that resolved a backend: downstream assets use its model."""
    frame = warehouse.query("SELECT * FROM classification_runs ORDER BY started_at DESC, finished_at DESC LIMIT 1")
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
    return warehouse.query(
        "SELECT model, codebook_hash, any_value(codebook_version) AS codebook_version, count(DISTINCT doc_id) AS documents "
        "FROM classification_values GROUP BY ALL ORDER BY model, codebook_hash").to_dicts()


def read_figures(warehouse: Warehouse, model: str, codebook_hash: str) -> pl.DataFrame:
    return warehouse.query("SELECT * FROM classification_figures WHERE model = ? AND codebook_hash = ? "
                           "ORDER BY variable = '*' DESC, variable", [model, codebook_hash])


def read_mirror_evaluations(warehouse: Warehouse) -> pl.DataFrame:
    return warehouse.query("SELECT * FROM mirror_evaluations ORDER BY log, decision_point")


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
    """One connection for the run; every commit(record) is its own transaction."""
    sql = f"INSERT OR REPLACE INTO ledger ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    with warehouse.connect() as con:
        def commit(record: dict) -> None:
            with interrupts_given_back():  # the run's connection stays open: translate at each commit
                con.execute(sql, [record[c] for c in columns])

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


def read_values(warehouse: Warehouse, codebook_hash: str) -> pl.DataFrame:
    """Every model's `classification_values` for one codebook."""
    return warehouse.query("SELECT * FROM classification_values WHERE codebook_hash = ?", [codebook_hash])


def evidence_audit_shares(warehouse: Warehouse, codebook_hash: str) -> pl.DataFrame:
    """Share of literal / approximate / absent / waived evidence per (model, codebook, variable)."""
    return warehouse.query(
        """SELECT model, codebook_hash, variable, count(*) AS answers,
                  round(100 * avg((audit_status = 'literal')::INT), 1) AS literal_pct,
                  round(100 * avg((audit_status = 'approximate')::INT), 1) AS approximate_pct,
                  round(100 * avg((audit_status = 'absent')::INT), 1) AS absent_pct,
                  round(100 * avg((audit_status = 'waived')::INT), 1) AS waived_pct
           FROM classification_values WHERE codebook_hash = ? GROUP BY ALL ORDER BY ALL""", [codebook_hash])


def coverage_totals(warehouse: Warehouse) -> tuple[int, int]:
    """(documents included, rows read) over every corpus file loaded."""
    row = warehouse.query("SELECT coalesce(sum(included), 0)::BIGINT AS inc, coalesce(sum(rows), 0)::BIGINT AS total "
                          "FROM coverage").row(0)
    return int(row[0]), int(row[1])


# -- content-hash IO manager and routing tables --------------------------------------------------

VERSIONS_TABLE = "asset_content_hashes"


def store_versioned_table(warehouse: Warehouse, table: str, frame: pl.DataFrame, digest: str) -> bool:
    """Rewrite `table` only when its content hash changed; returns whether it was rewritten."""
    with warehouse.connect() as con:
        con.execute(f"CREATE TABLE IF NOT EXISTS {VERSIONS_TABLE} (asset VARCHAR PRIMARY KEY, content_hash VARCHAR)")
        if con.execute(f"SELECT content_hash FROM {VERSIONS_TABLE} WHERE asset = ?", [table]).fetchall() == [(digest,)]:
            return False
        con.register("_frame", frame)
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM _frame")
        con.unregister("_frame")
        con.execute(f"INSERT OR REPLACE INTO {VERSIONS_TABLE} VALUES (?, ?)", [table, digest])
        return True


def read_table(warehouse: Warehouse, table: str) -> pl.DataFrame:
    return warehouse.query(f"SELECT * FROM {table}")


def store_routing_tables(warehouse: Warehouse, dataset: str, frames: dict[str, pl.DataFrame]) -> None:
    """routing_examples / routing_predictions / routing_metrics: this dataset's rows replaced."""
    with warehouse.connect() as con:
        for table, frame in frames.items():
            con.register("frame", frame)
            con.execute(f"CREATE TABLE IF NOT EXISTS {table} AS SELECT * FROM frame LIMIT 0")
            existing = {row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()}
            for name, dtype, *_ in con.execute("DESCRIBE SELECT * FROM frame").fetchall():
                if name not in existing:  # a column added since the table was created: migrate it
                    con.execute(f'ALTER TABLE {table} ADD COLUMN "{name}" {dtype}')
            con.unregister("frame")
            warehouse.replace_rows(con, table, frame, "dataset = ?", [dataset])
