"""What the corpus says, from stored answers: the question the research team classified for.

Per variable, how many documents take each value and what share of the counted documents that is,
with a 95 % Wilson interval (`scipy.stats.binomtest`); the same by year and by source; one variable
against another; and two answer sets (two models, or a model and the coders) side by side, so the
effect of the model on the conclusions is visible.

Only documents whose answers follow the codebook count (they are the ones with results); the others
are counted apart and shown: no abstract (left out at load), failed (no valid answer), not classified
yet. A list variable's document counts once for each value it names, so its shares may add up to
more than 100 %.
"""

from __future__ import annotations

import polars as pl

from adri_pipeline.classification.codebook import NO_INFORMATION_VALUES, Codebook

SHARE_SCHEMA = {
    "variable": pl.String,
    "value": pl.String,
    "label": pl.String,
    "documents": pl.Int64,
    "counted": pl.Int64,
    "share": pl.Float64,
    "low": pl.Float64,
    "high": pl.Float64,
}


def percent(share) -> str:
    """A share as people read it ("30.4 %"; a dash when there is none), for the terminal and the pages."""
    return "—" if share is None or share != share else f"{100 * share:.1f}\u00a0%"


def in_percent(table: pl.DataFrame) -> pl.DataFrame:
    """A table as the terminal prints it: each share column (`<name>_share`, 0-1, as the warehouse
    stores it) as `<name> %`, a percentage to one decimal."""
    shares = [c for c in table.columns if c.endswith("_share")]
    return table.with_columns((pl.col(c) * 100).round(1) for c in shares).rename(
        {c: f"{c.removesuffix('_share')} %" for c in shares}
    )


def wilson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (nan, nan with no trials)."""
    from scipy.stats import binomtest

    if not trials:
        return float("nan"), float("nan")
    interval = binomtest(successes, trials).proportion_ci(confidence_level=level, method="wilson")
    return float(interval.low), float(interval.high)


INFORMED = "informado"  # a text variable's answer that is not a no-information value


def exploded(values: pl.DataFrame, codebook: Codebook) -> pl.DataFrame:
    """One row per (document, variable, value): a list answer "a|b" becomes two rows; a text answer
    (a period, say) is counted as informed or as the no-information value it is."""
    text = [name for name, var in codebook.variables.items() if var.type == "text"]
    return (
        values.select("doc_id", "variable", pl.col("value").str.split("|"))
        .explode("value")
        .filter(pl.col("value") != "")
        .with_columns(
            pl.when(pl.col("variable").is_in(text) & ~pl.col("value").is_in(list(NO_INFORMATION_VALUES)))
            .then(pl.lit(INFORMED))
            .otherwise(pl.col("value"))
            .alias("value")
        )
        .unique(maintain_order=True)
    )


def _labelled(frame: pl.DataFrame, codebook: Codebook) -> pl.DataFrame:
    labels = [
        {"variable": name, "value": value, "label": var.label(value)}
        for name, var in codebook.variables.items()
        for value in var.allowed_values()
    ]
    table = pl.DataFrame(labels, schema={"variable": pl.String, "value": pl.String, "label": pl.String})
    return frame.join(table, on=["variable", "value"], how="left").with_columns(
        pl.col("label").fill_null(pl.col("value"))
    )


def shares(
    values: pl.DataFrame, codebook: Codebook, group: str | None = None, documents: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Counts and shares per (variable, value) — per `group` too ("year" or "source", read from
    `documents`) — with the 95 % Wilson interval of each share. The denominator is the documents
    counted in that group."""
    rows = exploded(values, codebook)
    keys = ["variable"]
    if group:
        meta = documents.select("doc_id", pl.col(group).cast(pl.String).fill_null("unknown"))
        rows = rows.join(meta, on="doc_id", how="left").with_columns(pl.col(group).fill_null("unknown"))
        totals = (
            values.select("doc_id")
            .unique()
            .join(meta, on="doc_id", how="left")
            .with_columns(pl.col(group).fill_null("unknown"))
            .group_by(group)
            .agg(pl.len().alias("counted"))
        )
        keys = [group, "variable"]
    else:
        totals = pl.DataFrame({"counted": [values["doc_id"].n_unique()]})
    counts = rows.group_by([*keys, "value"]).agg(pl.col("doc_id").n_unique().alias("documents"))
    counts = (
        counts.join(totals, on=group, how="left")
        if group
        else counts.with_columns(pl.lit(totals["counted"][0]).alias("counted"))
    )
    intervals = [wilson(d, n) for d, n in zip(counts["documents"], counts["counted"])]
    counts = counts.with_columns(
        (pl.col("documents") / pl.col("counted")).alias("share"),
        pl.Series("low", [low for low, _ in intervals], pl.Float64),
        pl.Series("high", [high for _, high in intervals], pl.Float64),
    )
    order = {name: i for i, name in enumerate(codebook.variables)}
    counts = _labelled(counts, codebook).with_columns(
        pl.col("variable").replace_strict(order, default=len(order)).alias("_order")
    )
    return (
        counts.sort(
            [*([group] if group else []), "_order", "documents", "value"],
            descending=[*([False] if group else []), False, True, False],
        )
        .drop("_order")
        .select(*([group] if group else []), *SHARE_SCHEMA)
    )


def cross(values: pl.DataFrame, codebook: Codebook, first: str, second: str) -> pl.DataFrame:
    """Documents per (value of `first`, value of `second`): e.g. abordagem × subárea."""
    for name in (first, second):
        if name not in codebook.variables:
            raise KeyError(f"{name!r} is not a variable of the codebook ({', '.join(codebook.variables)})")
    rows = exploded(values, codebook)
    a = rows.filter(pl.col("variable") == first).select("doc_id", pl.col("value").alias(first))
    b = rows.filter(pl.col("variable") == second).select("doc_id", pl.col("value").alias(second))
    return (
        a.join(b, on="doc_id")
        .group_by(first, second)
        .agg(pl.col("doc_id").n_unique().alias("documents"))
        .sort("documents", first, second, descending=[True, False, False])
    )


def side_by_side(first: pl.DataFrame, second: pl.DataFrame, names: tuple[str, str], codebook: Codebook) -> pl.DataFrame:
    """Shares of two answer sets on the documents both answered, with the difference in points."""
    common = set(first["doc_id"]) & set(second["doc_id"])
    a = shares(first.filter(pl.col("doc_id").is_in(list(common))), codebook)
    b = shares(second.filter(pl.col("doc_id").is_in(list(common))), codebook)
    left, right = names if names[0] != names[1] else (names[0], f"{names[1]} (second)")
    joined = (
        a.select("variable", "value", "label", pl.col("share").alias(left))
        .join(
            b.select("variable", "value", pl.col("share").alias(right)),
            on=["variable", "value"],
            how="full",
            coalesce=True,
        )
        .with_columns(pl.col(left).fill_null(0.0), pl.col(right).fill_null(0.0))
    )
    return joined.with_columns(
        ((pl.col(right) - pl.col(left)) * 100).round(1).alias("difference_pp"), pl.lit(len(common)).alias("documents")
    )
