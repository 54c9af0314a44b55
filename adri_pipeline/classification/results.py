"""Results per (model, codebook hash), reassembled from the ledger with the codebook's display labels,
and the ADR's figures over them.

No model is called here: a label-only codebook change produces renamed results from stored answers.
The figures follow ADR 0011's table: "JSON válido na primeira tentativa", "Nova tentativa usada",
"Evidência literal (sem as dispensadas) 94,8%; aproximada 3,5%; ausente 1,7%" per variable, and
seconds per document as median and 90th percentile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import polars as pl
from pydantic import BaseModel

from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.corpus import as_documents
from adri_pipeline.classification.ledger import Ledger, document_keys
from adri_pipeline.classification.prompt import build_prompt

QUOTED_STATUSES = ("literal", "approximate", "absent")  # shares among non-waived evidence
OVER_20_WORDS = "over_20_words"

VALUE_SCHEMA = {
    "doc_id": pl.String,
    "model": pl.String,
    "codebook_hash": pl.String,
    "codebook_version": pl.String,
    "variable": pl.String,
    "value": pl.String,
    "label": pl.String,
    "value_list": pl.List(pl.String),  # a list variable's values and labels as lists (SQL LISTs); else null
    "label_list": pl.List(pl.String),
    "evidencia": pl.String,
    "audit_status": pl.String,
    "evidence_field": pl.String,
    "evidence_start": pl.Int32,
    "evidence_end": pl.Int32,
    "evidence_flag": pl.String,
    "attempt": pl.Int32,
    "cache_key": pl.String,
}
DOCUMENT_SCHEMA = {
    "doc_id": pl.String,
    "model": pl.String,
    "codebook_hash": pl.String,
    "codebook_version": pl.String,
    "source": pl.String,
    "attempts": pl.Int32,
    "json_valid_first_try": pl.Boolean,
    "valid_first_try": pl.Boolean,
    "seconds": pl.Float64,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "cache_key": pl.String,
}


@dataclass
class Results:
    values: pl.DataFrame  # one row per (doc, variable)
    documents: pl.DataFrame  # one row per doc
    pending: int  # documents with no answer that follows the codebook yet


def _as_text(value) -> str:
    if isinstance(value, list):
        return "|".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _label(var, value) -> str:
    if isinstance(value, list):
        return "; ".join(var.label(v) for v in value)
    return var.label(value)


def assemble_results(warehouse, documents: pl.DataFrame, codebook: Codebook, model, prompt=None) -> Results:
    """`model` is anything with .model, .digest and .params (a backend or the identity a run recorded);
    `prompt`, the run's (built from the codebook otherwise)."""
    prompt = prompt or build_prompt(codebook)
    docs = as_documents(documents)
    sources = dict(zip(documents["doc_id"], documents["source"])) if "source" in documents.columns else {}
    keys = dict(zip(document_keys(docs, prompt, model), (d.doc_id for d in docs)))
    ledger = Ledger(warehouse).rows(list(keys))

    order = {doc_id: i for i, doc_id in enumerate(keys.values())}
    ledger.sort(key=lambda row: order[keys[row[0]]])
    base = {"model": model.model, "codebook_hash": codebook.content_hash, "codebook_version": codebook.version}
    value_rows, document_rows = [], []
    for key, response, audit, attempts, first_try, json_first_try, seconds, p_tokens, c_tokens in ledger:
        doc_id = keys[key]
        answer, audits = json.loads(response), json.loads(audit)
        kept_attempt = 1 if first_try else attempts
        value_rows += _value_rows(codebook, answer, audits, {"doc_id": doc_id, **base}, kept_attempt, key)
        document_rows.append(
            {
                "doc_id": doc_id,
                **base,
                "source": sources.get(doc_id),
                "attempts": attempts,
                "json_valid_first_try": first_try if json_first_try is None else json_first_try,
                "valid_first_try": first_try,
                "seconds": seconds,
                "prompt_tokens": p_tokens,
                "completion_tokens": c_tokens,
                "cache_key": key,
            }
        )
    return Results(
        pl.DataFrame(value_rows, schema=VALUE_SCHEMA),
        pl.DataFrame(document_rows, schema=DOCUMENT_SCHEMA),
        pending=len(docs) - len(document_rows),
    )


def _value_rows(codebook: Codebook, answer: dict, audits: dict, head: dict, attempt: int, key: str) -> list[dict]:
    """One document's answer as a row per variable (`head`: its doc_id, model and codebook): the value,
    its label, the evidence quoted and where the audit found it."""
    rows = []
    for name, var in codebook.variables.items():
        item, check = answer[name], audits.get(name, {})
        rows.append(
            {
                **head,
                "variable": name,
                "value": _as_text(item["valor"]),
                "label": _label(var, item["valor"]),
                "value_list": [str(v) for v in item["valor"]] if var.type == "list" else None,
                "label_list": [var.label(v) for v in item["valor"]] if var.type == "list" else None,
                "evidencia": item["evidencia"],
                "audit_status": check.get("status"),
                "evidence_field": check.get("field") or ("abstract" if check.get("start") is not None else None),
                "evidence_start": check.get("start"),
                "evidence_end": check.get("end"),
                "evidence_flag": OVER_20_WORDS if check.get("flags") else None,
                "attempt": attempt,
                "cache_key": key,
            }
        )
    return rows


def _share(part: int, whole: int) -> float | None:
    """part / whole, 0-1 to three decimals (what one decimal of a percentage said); None of nothing."""
    return round(part / whole, 3) if whole else None


def _percent(share: float | None) -> float | None:
    """A share as the figures' lines print it: a percentage, one decimal ("literal 94.8 %")."""
    return None if share is None else round(100 * share, 1)


class EvidenceFigures(BaseModel):
    """The evidence audit over quoted answers: literal / approximate / absent shares (0-1, None with
    nothing quoted), the waived ones counted apart, and quotes over 20 words."""

    literal_share: float | None = None
    approximate_share: float | None = None
    absent_share: float | None = None
    waived: int = 0
    over_20_words: int = 0


class ClassificationFigures(BaseModel):
    """ADR 0011's figures over everything one (model, codebook) holds: printed by the CLI and the demo,
    shown in Dagster's metadata, stored per variable (`classification_figures`) and with each run."""

    documents: int = 0
    pending: int = 0  # documents in the warehouse without an answer
    json_valid_first_try_share: float | None = None
    valid_first_try_share: float | None = None  # follows the codebook on the first try
    retry_share: float | None = None
    seconds_median: float | None = None
    seconds_p90: float | None = None
    evidence: EvidenceFigures = EvidenceFigures()
    evidence_by_variable: dict[str, EvidenceFigures] = {}


def _evidence_figures(values: pl.DataFrame) -> EvidenceFigures:
    statuses = values["audit_status"].to_list()
    quoted = sum(s in QUOTED_STATUSES for s in statuses)
    return EvidenceFigures(
        **{f"{s}_share": _share(statuses.count(s), quoted) for s in QUOTED_STATUSES},
        waived=statuses.count("waived"),
        over_20_words=int((values["evidence_flag"] == OVER_20_WORDS).sum()) if values.height else 0,
    )


def summarize(results: Results) -> ClassificationFigures:
    """The ADR's figures of these results."""
    docs, values = results.documents, results.values
    n = docs.height
    if not n:
        return ClassificationFigures(pending=results.pending)
    return ClassificationFigures(
        documents=n,
        pending=results.pending,
        json_valid_first_try_share=_share(int(docs["json_valid_first_try"].sum()), n),
        valid_first_try_share=_share(int(docs["valid_first_try"].sum()), n),
        retry_share=_share(int((docs["attempts"] > 1).sum()), n),
        seconds_median=round(docs["seconds"].median(), 3),
        seconds_p90=round(docs["seconds"].quantile(0.9, "nearest"), 3),
        evidence=_evidence_figures(values),
        evidence_by_variable={
            name: _evidence_figures(group) for (name,), group in values.group_by("variable", maintain_order=True)
        },
    )


def figures_table(figures: ClassificationFigures, model: str, codebook_hash: str) -> pl.DataFrame:
    """`classification_figures`: one row for all variables ('*') and one per variable."""
    if not figures.documents:
        return pl.DataFrame()
    overall = figures.model_dump(
        include={
            "documents",
            "json_valid_first_try_share",
            "valid_first_try_share",
            "retry_share",
            "seconds_median",
            "seconds_p90",
        }
    )
    rows = [
        {"model": model, "codebook_hash": codebook_hash, "variable": "*", **overall, **figures.evidence.model_dump()}
    ]
    rows += [
        {
            "model": model,
            "codebook_hash": codebook_hash,
            "variable": name,
            "documents": figures.documents,
            **shares.model_dump(),
        }
        for name, shares in figures.evidence_by_variable.items()
    ]
    return pl.DataFrame(rows, infer_schema_length=None)


def figures_lines(figures: ClassificationFigures) -> list[str]:
    """The ADR's figures as the lines the CLI and the demo print."""
    if not figures.documents:
        return []
    f, ev = figures, figures.evidence
    lines = [
        f"results: {f.documents} documents ({f.pending} in the warehouse without an answer)",
        f"JSON valid first try {_percent(f.json_valid_first_try_share)} %, follows the codebook first try "
        f"{_percent(f.valid_first_try_share)} %, retry used {_percent(f.retry_share)} %; "
        f"seconds/doc median {f.seconds_median}, p90 {f.seconds_p90}",
        f"evidence (non-waived): literal {_percent(ev.literal_share)} %, "
        f"approximate {_percent(ev.approximate_share)} %, absent {_percent(ev.absent_share)} %; "
        f"waived {ev.waived}; over 20 words {ev.over_20_words}",
    ]
    lines += [
        f"  {name:<14} literal {_percent(shares.literal_share)} %  "
        f"approximate {_percent(shares.approximate_share)} %  absent {_percent(shares.absent_share)} %  "
        f"waived {shares.waived}"
        for name, shares in f.evidence_by_variable.items()
    ]
    return lines
