"""Results per (model, codebook hash), reassembled from the ledger with the codebook's display labels.

No model is called here: a label-only codebook change produces renamed results from stored answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import polars as pl

from adri_pipeline.backends.base import Backend
from adri_pipeline.cache import Ledger, document_keys
from adri_pipeline.classify import as_documents
from adri_pipeline.codebook import Codebook
from adri_pipeline.prompt import build_prompt
from adri_pipeline.warehouse import Warehouse

AUDIT_STATUSES = ("literal", "approximate", "absent", "waived")


@dataclass
class Results:
    values: pl.DataFrame  # one row per (doc, variable)
    documents: pl.DataFrame  # one row per doc
    pending: int  # corpus documents with no valid answer yet


def _as_text(value) -> str:
    if isinstance(value, list):
        return "|".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _label(var, value) -> str:
    if isinstance(value, list):
        return "; ".join(var.label(v) for v in value)
    return var.label(value)


def assemble_results(
    warehouse: Warehouse, documents: pl.DataFrame, codebook: Codebook, backend: Backend
) -> Results:
    prompt = build_prompt(codebook)
    docs = as_documents(documents)
    keys = dict(zip(document_keys(docs, prompt, backend), (d.doc_id for d in docs)))
    ledger = Ledger(warehouse).rows(list(keys))

    order = {doc_id: i for i, doc_id in enumerate(keys.values())}
    ledger.sort(key=lambda row: order[keys[row[0]]])
    base = {"model": backend.model, "codebook_hash": codebook.content_hash, "codebook_version": codebook.version}
    value_rows, document_rows = [], []
    for key, response, audit, attempts, first_try, seconds, p_tokens, c_tokens in ledger:
        doc_id = keys[key]
        answer, audits = json.loads(response), json.loads(audit)
        kept_attempt = 1 if first_try else attempts
        for name, var in codebook.variables.items():
            item, check = answer[name], audits.get(name, {})
            value_rows.append({
                "doc_id": doc_id, **base, "variable": name, "value": _as_text(item["valor"]),
                "label": _label(var, item["valor"]), "evidencia": item["evidencia"],
                "audit_status": check.get("status"), "evidence_start": check.get("start"),
                "evidence_end": check.get("end"), "attempt": kept_attempt, "cache_key": key,
            })
        document_rows.append({
            "doc_id": doc_id, **base, "attempts": attempts, "valid_first_try": first_try,
            "seconds": seconds, "prompt_tokens": p_tokens, "completion_tokens": c_tokens, "cache_key": key,
        })
    values = pl.DataFrame(value_rows, schema={
        "doc_id": pl.String, "model": pl.String, "codebook_hash": pl.String, "codebook_version": pl.String,
        "variable": pl.String, "value": pl.String, "label": pl.String, "evidencia": pl.String,
        "audit_status": pl.String, "evidence_start": pl.Int32, "evidence_end": pl.Int32,
        "attempt": pl.Int32, "cache_key": pl.String,
    })
    docs_frame = pl.DataFrame(document_rows, schema={
        "doc_id": pl.String, "model": pl.String, "codebook_hash": pl.String, "codebook_version": pl.String,
        "attempts": pl.Int32, "valid_first_try": pl.Boolean, "seconds": pl.Float64,
        "prompt_tokens": pl.Int64, "completion_tokens": pl.Int64, "cache_key": pl.String,
    })
    return Results(values, docs_frame, pending=len(docs) - len(document_rows))


def store_results(warehouse: Warehouse, results: Results, model: str, codebook_hash: str) -> None:
    where, params = "model = ? AND codebook_hash = ?", (model, codebook_hash)
    with warehouse.connect() as con:
        warehouse.replace_rows(con, "classification_values", results.values, where, params)
        warehouse.replace_rows(con, "classification_documents", results.documents, where, params)


def summarize(results: Results) -> dict:
    """The figures printed at the end of a run and shown in Dagster metadata."""
    docs, values = results.documents, results.values
    n = docs.height
    summary = {"documents": n, "pending": results.pending}
    if not n:
        return summary
    summary["valid_first_try_pct"] = round(100 * docs["valid_first_try"].sum() / n, 1)
    summary["retry_pct"] = round(100 * (docs["attempts"] > 1).sum() / n, 1)
    summary["seconds_median"] = round(docs["seconds"].median(), 3)
    summary["seconds_p90"] = round(docs["seconds"].quantile(0.9, "nearest"), 3)
    summary["evidence_pct"] = _status_shares(values)
    quoted = values.filter(pl.col("audit_status") != "waived")
    summary["literal_of_quoted_pct"] = round(100 * (quoted["audit_status"] == "literal").mean(), 1) if quoted.height else None
    summary["evidence_pct_by_variable"] = {
        name: _status_shares(group) for (name,), group in values.group_by("variable", maintain_order=True)
    }
    return summary


def _status_shares(values: pl.DataFrame) -> dict:
    total = values.height or 1
    counts = dict(values["audit_status"].value_counts().iter_rows())
    return {status: round(100 * counts.get(status, 0) / total, 1) for status in AUDIT_STATUSES}
