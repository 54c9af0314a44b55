"""Results, figures, failures, runs and the codebook a run was asked with; the tables the content-hash
IO manager versions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from adri_pipeline.warehouse.connection import Warehouse, sql


def store_results(
    warehouse: Warehouse,
    values: pl.DataFrame,
    documents: pl.DataFrame,
    model: str,
    codebook_hash: str,
    doc_ids: list[str] | None = None,
) -> None:
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
        warehouse.replace_rows(
            con, "classification_figures", figures, "model = ? AND codebook_hash = ?", [model, codebook_hash]
        )


def store_failures(
    warehouse: Warehouse, answered: list[str], failed: list[tuple[str, str]], model: str, signature: str, run_id: str
) -> None:
    """Documents with no answer that follows the codebook, with the reason; answered ones leave the list."""
    with warehouse.connect() as con:
        con.execute(
            sql("failures_forget"),
            {"model": model, "signature": signature, "doc_ids": answered + [doc_id for doc_id, _ in failed]},
        )
        if failed:
            con.executemany(
                sql("failures_insert"),
                [(doc_id, model, signature, reason, run_id) for doc_id, reason in dict(failed).items()],
            )


def record_run(warehouse: Warehouse, run: dict) -> None:
    """One row per classification run: the backend it resolved once, its counts and figures."""
    with warehouse.connect() as con:
        warehouse.upsert(con, "classification_runs", pl.DataFrame([run]))


def last_run(warehouse: Warehouse, model: str | None = None) -> dict | None:
    """The latest classification run that resolved a backend (of `model`, when given): downstream
    assets use its model."""
    frame = (
        warehouse.query(sql("last_run"))
        if model is None
        else warehouse.query(sql("last_run_of_model"), {"model": model})
    )
    return frame.row(0, named=True) if frame.height else None


def store_codebook(warehouse: Warehouse, codebook, prompt) -> None:
    import json

    with warehouse.connect() as con:
        warehouse.upsert(
            con,
            "prompt_signatures",
            pl.DataFrame(
                [
                    {
                        "signature": prompt.signature,
                        "prompt_version": prompt.prompt_version,
                        "system_message": prompt.system_message,
                        "response_schema": json.dumps(prompt.schema, ensure_ascii=False),
                    }
                ]
            ),
        )
        warehouse.upsert(
            con,
            "codebooks",
            pl.DataFrame(
                [
                    {
                        "codebook_hash": codebook.content_hash,
                        "name": codebook.name,
                        "version": codebook.version,
                        "signature": prompt.signature,
                        "path": codebook.source,
                        "content": Path(codebook.source).read_text(encoding="utf-8")
                        if Path(codebook.source).is_file()
                        else "",
                    }
                ]
            ),
        )


def stored_codebook(warehouse: Warehouse, codebook_hash: str) -> dict | None:
    """{content, path} of the codebook stored under this content hash, or None."""
    frame = warehouse.query(sql("stored_codebook"), {"codebook_hash": codebook_hash})
    return frame.row(0, named=True) if frame.height else None


def result_sets(warehouse: Warehouse) -> list[dict]:
    """Each (model, codebook) the warehouse holds results for, with its document count."""
    return warehouse.query(sql("result_sets")).to_dicts()


def read_figures(warehouse: Warehouse, model: str, codebook_hash: str) -> pl.DataFrame:
    return warehouse.query(sql("figures"), {"model": model, "codebook_hash": codebook_hash})


@dataclass(frozen=True)
class WideColumn:
    """A codebook variable as a `results_wide` column: the codebook's definition of it (the column's
    comment) and whether it takes a list of values (the column is then a LIST of labels)."""

    definition: str
    is_list: bool = False


def publish_results_wide(warehouse: Warehouse, columns: dict[str, WideColumn]) -> None:
    """(Re)create the `results_wide` view with one column per variable of the codebook in use
    (`columns`: each variable's name -> its WideColumn), its comments with it: replacing a view drops them."""
    comments = "\n".join(
        sql("results_wide_variable")
        .replace("{column}", _identifier(name))
        .replace("{variable}", _escaped(name))
        .replace("{definition}", _escaped(column.definition))
        for name, column in columns.items()
    )
    selected = ", ".join(
        f"first({'label_list' if column.is_list else 'label'}) FILTER (WHERE variable = '{_escaped(name)}') "
        f"AS {_identifier(name)}"
        for name, column in columns.items()
    )
    statements = sql("results_wide").replace("{columns}", selected).replace("{variable_comments}", comments)
    with warehouse.connect() as con:
        con.execute(statements)


def _escaped(text: str) -> str:
    """Text for the inside of an SQL string literal: a statement DuckDB takes no parameters in (DDL)."""
    return text.replace("'", "''")


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


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
