"""The warehouse described by its own catalog: each table and view with the comment the migrations
give it, and each column with its own (migrations/0017_comments.sql, queries/results_wide.sql).
The description lives in the database, where an analyst's `duckdb_columns()` finds it; the reference
in docs/warehouse.md is generated from it and Dagster's column schemas are built from it, so the
three never disagree.

`python -m adri_pipeline.warehouse.catalog --write docs/warehouse.md` regenerates the reference
between the page's markers; without --write it prints the reference."""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from adri_pipeline.warehouse.connection import Warehouse, sql
from adri_pipeline.warehouse.results import WideColumn, publish_results_wide

REFERENCE_START = (
    "<!-- generated from the warehouse's comments by `python -m adri_pipeline.warehouse.catalog "
    "--write docs/warehouse.md`: edit the migrations' COMMENT ON, not this -->"
)
REFERENCE_END = "<!-- end of the generated reference -->"
# results_wide has a column per variable of the codebook in use: the reference shows one, standing for all
PLACEHOLDER_VARIABLE = {
    "<variable>": WideColumn("the codebook's own definition of the variable (its `definition` field).")
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str


@dataclass(frozen=True)
class Relation:
    """A table or view: what a row is (its comment), its columns, and its rows when counted."""

    database: str
    name: str
    kind: str  # "table" | "view"
    comment: str
    columns: tuple[Column, ...]
    rows: int | None = None  # tables only, when asked: a view's rows are a query to run

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.main.{self.name}"


def relations(con: duckdb.DuckDBPyConnection, count_rows: bool = False) -> list[Relation]:
    """Every table and view of the open database's main schema, by name, each with its columns."""
    columns: dict[str, list[Column]] = {}
    for table, name, data_type, comment in con.execute(sql("catalog_columns")).fetchall():
        columns.setdefault(table, []).append(Column(name, data_type, comment or ""))
    return [
        Relation(
            database,
            name,
            kind,
            comment or "",
            tuple(columns.get(name, ())),
            _rows(con, name) if count_rows and kind == "table" else None,
        )
        for database, name, kind, comment in con.execute(sql("catalog_relations")).fetchall()
    ]


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """Rows of a table named by the catalog (quoted: never a caller's text)."""
    return con.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0][0]


def uncommented(described: list[Relation]) -> list[str]:
    """The tables and views (`name`) and columns (`table.column`) without a comment."""
    return [r.name for r in described if not r.comment.strip()] + [
        f"{r.name}.{c.name}" for r in described for c in r.columns if not c.comment.strip()
    ]


def table_description(warehouse: Warehouse, table: str) -> Relation:
    """One table of the warehouse, its rows counted: what a Dagster asset that writes it reports."""
    with warehouse.connect() as con:
        return replace(next(r for r in relations(con) if r.name == table), rows=_rows(con, table))


def snapshot_description(warehouse: Warehouse) -> list[Relation]:
    """Every table and view of the analyst snapshot as published (read-only, the rows counted): the
    comments travel with the file, so what analysts open is described as the warehouse is."""
    with duckdb.connect(str(warehouse.snapshot_path), read_only=True) as con:
        return relations(con, count_rows=True)


def documented_relations() -> list[Relation]:
    """A freshly migrated warehouse's tables and views, with `results_wide` as a results refresh creates
    it (one placeholder variable column): what docs/warehouse.md lists."""
    with tempfile.TemporaryDirectory() as folder:
        warehouse = Warehouse(Path(folder) / "adri.duckdb")
        publish_results_wide(warehouse, PLACEHOLDER_VARIABLE)
        with warehouse.connect() as con:
            return relations(con)


def _cell(text: str) -> str:
    """Comment text inside a Markdown table: a pipe would end the cell, <x> would be taken for HTML and
    a pair of * for emphasis."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")


def _summary(comment: str) -> str:
    """A comment's first sentence, for the index."""
    head, _, _ = comment.partition(". ")
    return head.rstrip(".") + "."


def reference(described: list[Relation]) -> str:
    """The Markdown reference: an index of every table and view, then each one's columns."""
    lines = ["| table or view | what it holds |", "|---|---|"]
    lines += [
        f"| [{r.name}](#{r.name}){' (view)' if r.kind == 'view' else ''} | {_cell(_summary(r.comment))} |"
        for r in described
    ]
    for r in described:
        lines += [
            "",
            f"### {r.name}",
            "",
            f"*{r.kind.capitalize()}.* {_cell(r.comment)}",
            "",
            "| column | type | what it holds |",
            "|---|---|---|",
        ]
        lines += [f"| `{c.name}` | {c.type} | {_cell(c.comment)} |" for c in r.columns]
    return "\n".join(lines) + "\n"


def with_reference(page: str, generated: str) -> str:
    """`page` with the text between its reference markers replaced by `generated`."""
    before, start, rest = page.partition(REFERENCE_START)
    _, end, after = rest.partition(REFERENCE_END)
    if not start or not end:
        raise ValueError(f"the page has no generated reference between {REFERENCE_START!r} and {REFERENCE_END!r}")
    return f"{before}{REFERENCE_START}\n\n{generated}\n{REFERENCE_END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adri_pipeline.warehouse.catalog",
        description="The warehouse's tables, views and columns, from their comments.",
    )
    parser.add_argument(
        "--write",
        type=Path,
        metavar="PAGE",
        help="rewrite the reference between PAGE's markers (docs/warehouse.md) instead of printing it",
    )
    options = parser.parse_args(argv)
    generated = reference(documented_relations())
    if options.write is None:
        sys.stdout.write(generated)
        return 0
    page = options.write.read_text(encoding="utf-8")
    options.write.write_text(with_reference(page, generated), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
