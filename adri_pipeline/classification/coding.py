"""A coding round's codes: who coded what, in which pass; the gold they make; how far coders agree.

ADR 0011 asks the classification to serve validation ("comparar o modelo com codificadores") and
puts the validation sample first. A round has three passes:

- `blind`: each coder on their own, with no model answer shown;
- `review`: the principal model's answer is shown as a pre-annotation, and the coder keeps it or
  corrects it;
- `adjudication`: the (document, variable) pairs the blind coders answered differently, decided by a
  third reading.

The gold is the adjudicated value where there is one, else the value all blind coders gave. A
disagreement not yet adjudicated has no gold. Review codes were given after seeing the model's
answer, so they are neither gold nor part of coder-vs-coder agreement: they are kept, with the model
that was shown, for what a reviewer changed.

A codes frame has the coders' CSV columns: doc_id, variable, value (canonical spelling), evidencia,
coder, pass and round (agreement.load_codes gives every file these, "" for a round not named).
"""

from __future__ import annotations

import polars as pl

from adri_pipeline.classification.audit import DocumentIndex, audit_evidence
from adri_pipeline.classification.codebook import Codebook

BLIND, REVIEW, ADJUDICATION = "blind", "review", "adjudication"
PASSES = (BLIND, REVIEW, ADJUDICATION)
NO_CODER = ""  # a coders' CSV without a `coder` column: one unnamed coder
GOLD_SCHEMA = {
    "round": pl.String,
    "doc_id": pl.String,
    "variable": pl.String,
    "value": pl.String,
    "evidencia": pl.String,
    "source": pl.String,
}
AUDIT_SCHEMA = {
    "round": pl.String,
    "pass": pl.String,
    "coder": pl.String,
    "doc_id": pl.String,
    "variable": pl.String,
    "audit_status": pl.String,
    "field": pl.String,
    "evidence_start": pl.Int64,
    "evidence_end": pl.Int64,
    "score": pl.Float64,
}


def disagreements(codes: pl.DataFrame) -> pl.DataFrame:
    """(round, doc_id, variable, values): the blind pairs two or more coders answered differently;
    `values` lists "coder: value" in coder order."""
    blind = codes.filter(pl.col("pass") == BLIND)
    grouped = blind.group_by("round", "doc_id", "variable", maintain_order=True).agg(
        pl.col("coder").n_unique().alias("coders"),
        pl.col("value").n_unique().alias("distinct"),
        pl.concat_str(pl.col("coder"), pl.lit(": "), pl.col("value")).sort().alias("values"),
    )
    return grouped.filter((pl.col("coders") >= 2) & (pl.col("distinct") > 1)).select(
        "round", "doc_id", "variable", "values"
    )


def gold_codes(codes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(gold, unresolved). Gold: round, doc_id, variable, value, evidencia, and `source`, which is
    "adjudicated" or "agreed" (or "single coder"). Unresolved: the disagreements with no adjudication."""
    keys = ["round", "doc_id", "variable"]
    adjudicated = (
        codes.filter(pl.col("pass") == ADJUDICATION)
        .unique(subset=keys, keep="last", maintain_order=True)
        .select(*keys, "value", "evidencia", pl.lit("adjudicated").alias("source"))
    )
    blind = codes.filter(pl.col("pass") == BLIND).join(adjudicated.select(keys), on=keys, how="anti")
    per_pair = blind.group_by(keys, maintain_order=True).agg(
        pl.col("value").first(),
        pl.col("evidencia").first(),
        pl.col("value").n_unique().alias("distinct"),
        pl.col("coder").n_unique().alias("coders"),
    )
    agreed = per_pair.filter(pl.col("distinct") == 1).select(
        *keys,
        "value",
        "evidencia",
        pl.when(pl.col("coders") >= 2).then(pl.lit("agreed")).otherwise(pl.lit("single coder")).alias("source"),
    )
    unresolved = disagreements(codes).join(adjudicated.select(keys), on=keys, how="anti")
    order = {name: index for index, name in enumerate(codes["round"].unique(maintain_order=True))}
    gold = (
        pl.concat([adjudicated, agreed])
        .cast(GOLD_SCHEMA)
        .sort(pl.col("round").replace_strict(order, return_dtype=pl.Int64), "doc_id", "variable")
    )
    return gold, unresolved  # rounds in the order the file has them: the last is the latest


def audit_codes(codes: pl.DataFrame, documents: dict, codebook: Codebook) -> pl.DataFrame:
    """Each code's evidence audited as the model's is (classification/audit.py): literal, approximate,
    absent or waived, with its field and offsets. `documents`: doc_id -> Document (title, abstract)."""
    rows, indexes = [], {}
    for row in codes.iter_rows(named=True):
        document = documents.get(row["doc_id"])
        if document is None:
            continue
        index = indexes.setdefault(row["doc_id"], DocumentIndex(document.abstract, document.title))
        variable = codebook.variables.get(row["variable"])
        waivable = {str(v).lower() for v in variable.no_information()} if variable else set()
        no_information = not row["value"] or set(row["value"].split("|")) <= waivable
        audit = audit_evidence(row["evidencia"] or "", index, no_information=no_information)
        rows.append(
            {
                "round": row["round"],
                "pass": row["pass"],
                "coder": row["coder"],
                "doc_id": row["doc_id"],
                "variable": row["variable"],
                "audit_status": audit.status,
                "field": audit.field,
                "evidence_start": audit.start,
                "evidence_end": audit.end,
                "score": audit.score,
            }
        )
    return pl.DataFrame(rows, schema=AUDIT_SCHEMA)


def audit_shares(audits: pl.DataFrame) -> pl.DataFrame:
    """Per (round, pass, coder): how many codes' evidence is literal, approximate, absent, waived."""
    if audits.is_empty():
        return pl.DataFrame(schema={"round": pl.String, "pass": pl.String, "coder": pl.String, "codes": pl.Int64})
    counts = audits.pivot(
        on="audit_status", index=["round", "pass", "coder"], values="doc_id", aggregate_function="len"
    ).fill_null(0)
    statuses = [s for s in ("literal", "approximate", "absent", "waived") if s in counts.columns]
    return counts.select(
        "round", "pass", "coder", pl.sum_horizontal(statuses).cast(pl.Int64).alias("codes"), *statuses
    ).sort("round", "pass", "coder")


WITHOUT_GOLD_SCHEMA = {"doc_id": pl.String, "variable": pl.String, "reason": pl.String, "values": pl.String}


def without_gold(
    doc_ids: list[str], gold: pl.DataFrame, unresolved: pl.DataFrame, variables: list[str]
) -> pl.DataFrame:
    """WITHOUT_GOLD_SCHEMA: per variable, the documents of `doc_ids` (a round's, or a random draw's)
    with no gold for it: `disputed` (the blind coders disagree and nobody adjudicated; `values` says who
    answered what) or `not coded`. These are the hard documents: left out in silence, the sample would
    measure the model on the easy ones only."""
    keys = pl.DataFrame({"doc_id": list(dict.fromkeys(doc_ids))}, schema={"doc_id": pl.String}).join(
        pl.DataFrame({"variable": variables}, schema={"variable": pl.String}), how="cross"
    )
    disputed = unresolved.select("doc_id", "variable", pl.col("values").list.join("; ")).unique(["doc_id", "variable"])
    return (
        keys.join(gold.select("doc_id", "variable").unique(), on=["doc_id", "variable"], how="anti")
        .join(disputed, on=["doc_id", "variable"], how="left")
        .select(
            "doc_id",
            "variable",
            pl.when(pl.col("values").is_not_null())
            .then(pl.lit("disputed"))
            .otherwise(pl.lit("not coded"))
            .alias("reason"),
            "values",
        )
        .cast(WITHOUT_GOLD_SCHEMA)
        .sort("variable", "doc_id")
    )
