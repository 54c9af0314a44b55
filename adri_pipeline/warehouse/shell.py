"""`adri sql` (`make sql`): an analyst's SQL shell on the snapshot, with the DuckDB this project pins.

Why a shell of our own: no standalone DuckDB client opens the warehouse. The newest `duckdb-cli` on
PyPI (1.5.6) refuses DuckDB 2.0's storage, and the duckdb Python package ships no shell. Clients built
on the installed `duckdb` package read whatever it writes; this one is the smallest such client, so
the version that reads the file is always the version that wrote it (`adri sql --version`).

It opens the snapshot read-only, never the writer's file: an analyst session there would block
every run (docs/warehouse.md). Statements end with `;`; `.tables` lists the tables and views with
their comments, `.quit` (or Ctrl+D) leaves.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import duckdb

PROMPT, CONTINUED = "adri-sql> ", "     ...> "
TABLES = (
    "SELECT table_name AS name, table_type AS kind, comment FROM information_schema.tables "
    "WHERE table_schema = 'main' ORDER BY name"
)


class SnapshotMissing(Exception):
    """No snapshot beside the warehouse yet."""


def open_snapshot(snapshot: Path) -> duckdb.DuckDBPyConnection:
    if not snapshot.is_file():
        raise SnapshotMissing(
            f"{snapshot}: no analyst snapshot yet; run `adri classify` or `adri snapshot` to publish it"
        )
    return duckdb.connect(str(snapshot), read_only=True)


def statements(con: duckdb.DuckDBPyConnection, text: str) -> Iterator[str]:
    """The statements in `text`, split by DuckDB's own parser (a `;` inside a string stays there);
    dot commands (`.tables`) stand alone on their line. A chunk that does not parse is yielded whole,
    so running it says DuckDB's error."""
    sql: list[str] = []
    for line in [*text.splitlines(), ".end"]:
        if not line.strip().startswith("."):
            sql.append(line)
            continue
        chunk, sql = "\n".join(sql).strip(), []
        if chunk:
            try:
                yield from (str(statement.query) for statement in con.extract_statements(chunk))
            except duckdb.Error:
                yield chunk
        if line.strip() != ".end":
            yield line.strip()


def run_statement(con: duckdb.DuckDBPyConnection, statement: str, out: TextIO) -> str:
    """Run one statement and print its rows: "ok", "error" (printed, not raised: a typo must not end
    an analyst's session) or "quit"."""
    if statement in (".quit", ".exit"):
        return "quit"
    try:
        relation = con.sql(TABLES if statement == ".tables" else statement)
    except duckdb.Error as exc:
        print(f"error: {exc}", file=out)
        return "error"
    if relation is not None:
        print(relation, file=out)  # DuckDB's own box rendering, long results elided in the middle
    return "ok"


def run_text(con: duckdb.DuckDBPyConnection, text: str, out: TextIO | None = None) -> int:
    """Run every statement in `text` (a file, `--command`) printing to `out` (stdout); the number that failed."""
    out = out or sys.stdout
    failed = 0
    for statement in statements(con, text):
        status = run_statement(con, statement, out)
        if status == "quit":
            break
        failed += status == "error"
    return failed


def interactive(con: duckdb.DuckDBPyConnection, snapshot: Path) -> int:
    """The prompt: a statement runs once its line ends with `;`."""
    print(f"DuckDB {duckdb.__version__} on {snapshot} (read-only). `.tables`, `.quit`; statements end with `;`.")
    pending: list[str] = []
    while True:
        try:
            line = input(CONTINUED if pending else PROMPT)
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:  # Ctrl+C drops the statement being typed, as a shell does
            print()
            pending = []
            continue
        pending.append(line)
        if line.strip().startswith(".") and len(pending) == 1 or line.rstrip().endswith(";"):
            text, pending = "\n".join(pending), []
            if any(run_statement(con, one, sys.stdout) == "quit" for one in statements(con, text)):
                return 0
