"""Shares a reviewer accepts: the model's labels on every document, corrected by the coders' gold on a
random sample of them (prediction-powered inference).

ADR 0011 measures the model against coders because its labels are not truth; a share of the
model's labels is biased by its errors, and its interval is too narrow. With a random coded sample the
error can be measured and taken out. Per (variable, value), with Y the coders' gold (1 if the document
takes the value) and Ŷ the model's answer:

- **model only**: the share of Ŷ over every classified document, Wilson 95 % interval (as the
  findings page): valid only if the model never errs;
- **coders only**: the share of Y on the random sample (weighted if the draw was stratified), its
  normal 95 % interval (`ppi_py.classical_mean_ci`): valid for a common value, as wide as the sample
  is small;
- **corrected** and **this corpus**: one point, the post-stratified estimate (Cochran 1977, §5A.9)
  with the model's answer as the stratum: with r_a the gold's (weighted) rate among the coded
  documents the model answered a (0 or 1) and m_a the uncoded documents it answered a, the share is
  (Σ Y over the coded + m₀·r₀ + m₁·r₁) / N. With a 0/1 answer it is the regression estimator of
  survey sampling (Särndal, Swensson and Wretman 1992, §6.4), and near PPI++'s point (Angelopoulos,
  Duchi and Zrnic 2023). Its intervals are not the normal ones those use: on a rare value the error
  Y − Ŷ is 0 on almost every coded document, its sample variance near or at 0, and a normal interval
  covered a 5 % share in 65–83 % of draws, zero wide when no coded document took the value.
  **This corpus** (the share among the classified documents): how many of the m_a uncoded documents
  take the value is, given the coded ones, beta-binomial (the predictive law of a binomial count,
  Thatcher 1964); with the Clopper–Pearson pair of parameters, (x_a, n_a − x_a + 1) for the lower
  bound and (x_a + 1, n_a − x_a) for the upper (x_a of the n_a coded documents answered a take the
  value), each side is exact or conservative. The two strata's laws are convolved and the interval is
  the 2.5 % and 97.5 % points of the total, plus the coded documents' own Σ Y, over N. It closes as
  the corpus is coded, is never zero wide while a document is uncoded (one document at least), and
  is the share exactly once all are. With a stratified draw (weights) x_a and n_a are effective
  counts: r_a times Kish's (Σw)²/Σw².
  **Corrected** (the share in the population of studies the corpus is drawn from): the corpus is
  itself a draw of N, so its share's own Clopper–Pearson 95 % interval at N is added to this
  corpus's interval side by side in quadrature (MOVER: Zou and Donner 2008), the two being
  uncorrelated. On a few hundred documents it stays wide however many are coded.
  A model answer no coded document has leaves its uncoded documents' share anything from 0 to 1,
  and `corrected_note` says so. Both are valid when the coded documents are a random draw from the
  classified ones, every drawn document has gold, and the model did not learn from them (its errors
  there are then its errors everywhere); not otherwise. How often they cover the truth on an
  independent grid of rare and common values, small and large corpora and samples, good and poor
  models: docs/findings.md (benchmarks/corrected_grid; the choice: docs/decisions.md).

Shares are clipped to [0, 1]. Fewer than 2 coded documents: no corrected estimate. A list variable's
value is one indicator per document (a technique named or not), so list variables are corrected per
technique.

Only a random sample can correct: documents picked by `adri suggest` (active learning) are chosen
for being hard, and their errors are not the corpus's. `draw` draws one; `adri code start --random N`
records it with the round.

What else the intervals assume, and where it is enforced (queries.corrected): the draw is of the
corpus corrected (`population_hash`; reserved documents never counted); every drawn document has gold
(those without bound the intervals, `worst_case_shares`); and the model did not learn from the drawn
documents (one that did is corrected out of fold, `cross_fitted_labels`). Per year or source,
`corrected_by_group` runs the same estimators on each group's rows and `group_difference` compares two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.findings import _labelled, exploded, wilson

LEVEL = 0.95
MIN_CODED_FOR_PLANNING = 30  # below this the sample's error variance is too rough to plan with
SAMPLE_SCHEMA = {"doc_id": pl.String, "stratum": pl.String, "weight": pl.Float64}
LABELS_SCHEMA = {
    "variable": pl.String,
    "value": pl.String,
    "doc_id": pl.String,
    "model": pl.Float64,
    "gold": pl.Float64,
    "weight": pl.Float64,
}
CORRECTED_SCHEMA = {
    "variable": pl.String,
    "value": pl.String,
    "label": pl.String,
    "coded": pl.Int64,
    "classified": pl.Int64,
    "model_share": pl.Float64,
    "model_low": pl.Float64,
    "model_high": pl.Float64,
    "coders_share": pl.Float64,
    "coders_low": pl.Float64,
    "coders_high": pl.Float64,
    "corrected_share": pl.Float64,
    "corrected_low": pl.Float64,
    "corrected_high": pl.Float64,
    "corpus_share": pl.Float64,
    "corpus_low": pl.Float64,
    "corpus_high": pl.Float64,
    "coded_for_width": pl.Int64,
    "narrowest_width": pl.Float64,
    "corpus_coded_for_width": pl.Int64,
    "missing_gold": pl.Int64,
    "corrected_se": pl.Float64,
    "corrected_note": pl.String,
}
GROUP_SCHEMA = {"group": pl.String, **CORRECTED_SCHEMA}
MIN_CODED_PER_GROUP = 10  # below this a group's coded sample is too thin for a normal interval: not corrected
DIFFERENCE_SCHEMA = {
    "variable": pl.String,
    "value": pl.String,
    "label": pl.String,
    "first": pl.String,
    "second": pl.String,
    "difference": pl.Float64,
    "low": pl.Float64,
    "high": pl.Float64,
    "why_not": pl.String,
}
BOUNDED = ("coders", "corrected", "corpus")  # the estimates the coders' gold enters


ERRORS_SCHEMA = {
    "variable": pl.String,
    "value": pl.String,
    "label": pl.String,
    "coded_with": pl.Int64,
    "found": pl.Int64,
    "sensitivity": pl.Float64,
    "sensitivity_low": pl.Float64,
    "sensitivity_high": pl.Float64,
    "coded_without": pl.Int64,
    "false_alarms": pl.Int64,
    "false_alarm_rate": pl.Float64,
    "false_alarm_low": pl.Float64,
    "false_alarm_high": pl.Float64,
}
TIGHTEST_SCHEMA = {
    "model": pl.String,
    "coded": pl.Int64,
    "shares": pl.Int64,
    "mean_width": pl.Float64,
    "widest": pl.Float64,
    "widest_share": pl.String,
}


@dataclass
class CorrectedFindings:
    """The corrected shares of one model's answers (CORRECTED_SCHEMA), from a random coded sample."""

    model: str
    rounds: list[str]  # the random rounds whose gold corrects
    drawn: int  # documents drawn at random
    coded: int  # of them, with gold on at least one variable
    width: float  # the target interval width `coded_for_width` plans for
    table: pl.DataFrame
    to_code: dict[str, int | None]  # per variable: still_to_code, for the population's share
    to_code_corpus: dict[str, int | None]  # per variable: still_to_code, for this corpus's own share
    labels: pl.DataFrame  # LABELS_SCHEMA: what the estimates were computed from
    notes: list[str] = field(default_factory=list)  # what a reviewer must know (a stale or mixed sample)
    missing: pl.DataFrame | None = None  # coding.WITHOUT_GOLD_SCHEMA: drawn documents without gold, per variable
    by_group: dict[str, pl.DataFrame] = field(default_factory=dict)  # "year", "source": corrected_by_group


def estimation_sample(samples: pl.DataFrame, codebook_hash: str) -> tuple[pl.DataFrame, list[str], list[str]]:
    """(doc_id and weight of the documents drawn at random, their rounds, notes). Every random round
    together when none was stratified (each drew from what the earlier ones left, so together they are
    one random sample); with a stratified one, only the latest round, whose weights are its own."""
    if samples.is_empty():
        return pl.DataFrame(schema={"doc_id": pl.String, "weight": pl.Float64}), [], []
    rounds = list(dict.fromkeys(samples["round"]))
    notes = []
    if (samples["stratified_by"] != "").any() and len(rounds) > 1:
        notes.append(
            f"random rounds {', '.join(rounds[:-1])} left out: a stratified draw's weights hold for its "
            f"own round only, so round {rounds[-1]} corrects alone"
        )
        rounds = rounds[-1:]
    used = samples.filter(pl.col("round").is_in(rounds))
    stale = sorted(set(used.filter(pl.col("codebook_hash") != codebook_hash)["round"]))
    if stale:
        notes.append(
            f"round(s) {', '.join(stale)} were drawn under another version of the codebook: their gold may "
            "code variables that changed since"
        )
    return used.select("doc_id", "weight").unique("doc_id", keep="last"), rounds, notes


def population_hash(doc_ids) -> str:
    """What a draw was drawn from, as a hash of its sorted document ids: corrected findings compare it
    with the corpus they correct, so a draw is never applied to another one (a corpus grown since, or
    cut by --limit or --source)."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(set(doc_ids))).encode("utf-8")).hexdigest()


def draw(population: list[str], n: int, seed: int, strata: dict[str, str] | None = None) -> pl.DataFrame:
    """A simple random sample of `n` documents of `population` (without replacement, numpy's seeded
    generator), or with `strata` (doc_id -> year or source) a stratified one (stratum_sizes); each
    document's weight is its stratum's size over the documents drawn from it, scaled so that a simple
    sample's weights are all 1. A stratum given no document (only when `n` is below the number of
    strata) is missing from the sample: the caller records it (inclusion probability zero)."""
    population = sorted(set(population))
    if n > len(population):
        raise ValueError(f"a sample of {n} from {len(population)} documents: draw at most {len(population)}")
    rng = np.random.default_rng(seed)
    if not strata:
        chosen = rng.choice(len(population), size=n, replace=False)
        return pl.DataFrame(
            {"doc_id": [population[i] for i in sorted(chosen)], "stratum": [""] * n, "weight": [1.0] * n},
            schema=SAMPLE_SCHEMA,
        )
    groups: dict[str, list[str]] = {}
    for doc_id in population:
        groups.setdefault(str(strata.get(doc_id, "unknown")), []).append(doc_id)
    rows = []
    for group, size in stratum_sizes({g: len(ids) for g, ids in sorted(groups.items())}, n).items():
        ids = groups[group]
        for i in sorted(rng.choice(len(ids), size=size, replace=False)):
            rows.append({"doc_id": ids[i], "stratum": group, "weight": len(ids) / size * n / len(population)})
    return pl.DataFrame(rows, schema=SAMPLE_SCHEMA).sort("doc_id")


def stratum_sizes(sizes: dict[str, int], n: int) -> dict[str, int]:
    """How many of `n` to draw from each stratum: proportional allocation (largest remainder, so they add
    up to n), then every stratum at least one document while n allows it (taken from the stratum with
    the most), since a stratum drawn from zero times has inclusion probability zero and no weight can
    stand for it. Strata of zero are left out of the answer."""
    total = sum(sizes.values())
    quotas = {g: n * size / total for g, size in sizes.items()}
    out = {g: math.floor(q) for g, q in quotas.items()}
    for g in sorted(quotas, key=lambda g: (out[g] - quotas[g], g))[: n - sum(out.values())]:
        out[g] += 1
    for g in sorted(sizes, key=lambda g: (sizes[g], g)):
        richest = max(out, key=lambda h: (out[h], h))
        if out[g] == 0 and out[richest] > 1:
            out[g], out[richest] = 1, out[richest] - 1
    return {g: size for g, size in out.items() if size}


def _takes(rows: pl.DataFrame, variable: str, value: str, name: str) -> pl.DataFrame:
    """doc_id, `name` = 1.0: the documents whose answer to `variable` takes `value`."""
    return (
        rows.filter((pl.col("variable") == variable) & (pl.col("value") == value))
        .select("doc_id", pl.lit(1.0).alias(name))
        .unique()
    )


def labels(
    model_values: pl.DataFrame, gold_values: pl.DataFrame, sample: pl.DataFrame, codebook: Codebook
) -> pl.DataFrame:
    """One row per (variable, value, classified document): `model` 1.0 if the model's answer takes the
    value, `gold` the same for the coders' gold on the random sample (null elsewhere), `weight` the
    sample weight (null elsewhere). The table the estimates are computed from, exported as it is so
    anyone can reproduce them with the library (`adri findings --labels FILE`)."""
    model_rows, gold_rows = exploded(model_values, codebook), exploded(gold_values, codebook)
    answered = model_values.select("doc_id", "variable").unique()
    coded = (
        gold_values.select("doc_id", "variable")
        .unique()
        .join(sample.select("doc_id", "weight"), on="doc_id")
        .join(answered, on=["doc_id", "variable"])
    )
    frames = []
    for variable in codebook.variables:
        docs = (
            answered.filter(pl.col("variable") == variable)
            .select("doc_id")
            .join(coded.filter(pl.col("variable") == variable).select("doc_id", "weight"), on="doc_id", how="left")
        )
        values = sorted(
            set(model_rows.filter(pl.col("variable") == variable)["value"])
            | set(gold_rows.filter(pl.col("variable") == variable)["value"])
        )
        for value in values:
            frame = (
                docs.join(_takes(model_rows, variable, value, "model"), on="doc_id", how="left")
                .join(_takes(gold_rows, variable, value, "gold"), on="doc_id", how="left")
                .with_columns(
                    pl.col("model").fill_null(0.0),
                    pl.when(pl.col("weight").is_not_null()).then(pl.col("gold").fill_null(0.0)).alias("gold"),
                )
            )
            frames.append(
                frame.select(
                    pl.lit(variable).alias("variable"),
                    pl.lit(value).alias("value"),
                    "doc_id",
                    "model",
                    "gold",
                    "weight",
                )
            )
    return (
        pl.concat(frames).cast(LABELS_SCHEMA).sort("variable", "value", "doc_id")
        if frames
        else pl.DataFrame(schema=LABELS_SCHEMA)
    )


def cross_fitted_labels(per_fold: list[pl.DataFrame]) -> pl.DataFrame:
    """LABELS_SCHEMA from one `labels` frame per fold model, each holding the drawn documents' answers
    by the model fitted without them and the other documents' by that fold's model: `model` is the
    folds' majority (a value a fold never gave counts 0; a tie is 0). Every drawn document has the
    same answer in each frame, so it stays its out-of-fold answer; an undrawn one gets the majority,
    a yes/no answer as the exact estimator's strata need (`stratified_estimate`). That is the
    cross-fitting of cross-prediction-powered inference (Zrnic and Candès 2024), with the exact
    intervals in place of its normal one, and the draw's weights when it was stratified."""
    keys = ["variable", "value", "doc_id"]
    return (
        pl.concat(per_fold)
        .group_by(keys, maintain_order=True)
        .agg(
            (pl.col("model").sum() / len(per_fold) > 0.5).cast(pl.Float64).alias("model"),
            pl.col("gold").first(),
            pl.col("weight").first(),
        )
        .select(*LABELS_SCHEMA)
        .cast(LABELS_SCHEMA)
        .sort("variable", "value", "doc_id")
    )


def estimate(rows: pl.DataFrame) -> dict:
    """The three estimates of one (variable, value), with their intervals, from its `labels` rows."""
    import ppi_py

    coded = rows.filter(pl.col("gold").is_not_null())
    uncoded = rows.filter(pl.col("gold").is_null())
    model = rows["model"].to_numpy()
    low, high = wilson(int(model.sum()), len(model))
    out = {
        "coded": coded.height,
        "classified": rows.height,
        "model_share": float(model.mean()) if len(model) else math.nan,
        "model_low": low,
        "model_high": high,
    }
    if coded.height < 2:
        return (
            out
            | dict.fromkeys(
                (
                    "coders_share",
                    "coders_low",
                    "coders_high",
                    "corrected_share",
                    "corrected_low",
                    "corrected_high",
                    "corpus_share",
                    "corpus_low",
                    "corpus_high",
                    "corrected_se",
                ),
                math.nan,
            )
            | {"corrected_note": None}
        )
    y, y_hat, w = (coded[c].to_numpy() for c in ("gold", "model", "weight"))
    coders = ppi_py.classical_mean_ci(y, w=w, alpha=1 - LEVEL)
    clip = lambda v: float(np.clip(np.ravel(v)[0], 0.0, 1.0))  # noqa: E731
    corrected = stratified_estimate(y, y_hat, w, uncoded["model"].to_numpy())
    return (
        out
        | {
            "coders_share": clip(np.average(y, weights=w)),
            "coders_low": clip(coders[0]),
            "coders_high": clip(coders[1]),
            "corrected_se": standard_error((corrected["corrected_low"], corrected["corrected_high"])),
        }
        | corrected
    )


def standard_error(interval) -> float:
    """The standard error a 95 % interval implies (its width over 2·z): what a difference between two
    groups' independent estimates is built from (group_difference). The corrected interval is exact,
    not normal, so for a share near 0 or 1 this is an approximation, said where the difference is shown."""
    from scipy.stats import norm

    low, high = (float(np.ravel(v)[0]) for v in interval)
    return (high - low) / (2 * norm.ppf(1 - (1 - LEVEL) / 2))


def stratified_estimate(y: np.ndarray, y_hat: np.ndarray, w: np.ndarray, rest: np.ndarray) -> dict:
    """The corrected share (the population's) and this corpus's, with their 95 % intervals: `y`, `y_hat`
    and `w` on the coded documents, `rest` the model's answer on the documents not coded (the module's
    "corrected" and "this corpus"). Both share one point: the coders' gold where it is known, and on
    the documents not coded, per answer of the model, the gold's rate among the coded it answered alike."""
    total, known = len(y) + len(rest), float(y.sum())
    strata = [
        _stratum(y[y_hat == answer], w[y_hat == answer], int((rest == answer).sum()), answer) for answer in (0.0, 1.0)
    ]
    expected = sum(s.uncoded * s.rate for s in strata)
    low, high = _uncoded_bounds(strata)
    low, high = min(low, expected), max(high, expected)
    share, corpus_low, corpus_high = (known + expected) / total, (known + low) / total, (known + high) / total
    drawn_low, drawn_high = _exact(share * total, total)  # the corpus is itself a draw of the population
    clip = lambda v: float(np.clip(v, 0.0, 1.0))  # noqa: E731
    return {
        "corrected_share": clip(share),
        "corpus_share": clip(share),
        "corrected_low": clip(share - math.hypot(share - corpus_low, share - drawn_low)),
        "corrected_high": clip(share + math.hypot(corpus_high - share, drawn_high - share)),
        "corpus_low": clip(corpus_low),
        "corpus_high": clip(corpus_high),
        "corrected_note": _note(strata, len(y)),
    }


@dataclass
class _Stratum:
    """The coded and uncoded documents the model gave one answer (`answer`): the gold's rate among
    the coded ones (`found` of `coded`) predicts how many of the uncoded take the value."""

    answer: float
    coded: float  # the coded documents' effective number (Kish's (Σw)²/Σw²: their number when unweighted)
    found: float  # of them, effectively, those the gold gives the value
    uncoded: int

    @property
    def rate(self) -> float:
        return self.found / self.coded if self.coded else self.answer  # no gold: the model's answer


def _stratum(y: np.ndarray, w: np.ndarray, uncoded: int, answer: float) -> _Stratum:
    coded = float(w.sum() ** 2 / (w**2).sum()) if len(y) else 0.0
    return _Stratum(answer, coded, float(np.average(y, weights=w)) * coded if len(y) else 0.0, uncoded)


def _uncoded_bounds(strata: list[_Stratum]) -> tuple[int, int]:
    """The 95 % bounds of how many uncoded documents take the value. Per stratum that count is
    beta-binomial given the coded (the predictive law of a binomial count, Thatcher 1964), with the
    Clopper–Pearson pair of parameters: found + 1 for the upper bound, found for the lower, which
    makes each side exact or conservative; the strata's counts add up (their laws convolved), so
    the bounds are quantiles of the total. Never zero wide while documents remain uncoded: then at
    least one document apart."""
    from scipy.signal import fftconvolve

    alpha = 1 - LEVEL
    bounds = []
    for side in ("low", "high"):
        start, law = 0, np.ones(1)
        for stratum in strata:
            offset, part = _predicted(stratum, upper=side == "high")
            start, law = start + offset, np.clip(fftconvolve(law, part), 0, None)
        cumulative = np.cumsum(law) / law.sum()
        bounds.append(
            start + int(np.searchsorted(cumulative, alpha / 2, side="right"))
            if side == "low"
            else start + int(np.searchsorted(cumulative, 1 - alpha / 2 - 1e-12))
        )
    low, high = bounds
    uncoded = sum(s.uncoded for s in strata)
    if uncoded and high <= low:
        low, high = (low, low + 1) if low < uncoded else (uncoded - 1, uncoded)
    return low, high


def _predicted(stratum: _Stratum, upper: bool) -> tuple[int, np.ndarray]:
    """(first count, law from it): how many of a stratum's uncoded documents take the value, beta-
    binomial with (found + 1, coded − found) for the upper bound, (found, coded − found + 1) for the
    lower; a parameter at 0 puts it all at an end (none found, or no coded document at all). The
    law is kept where the rate's beta law leaves more than 10⁻¹² on either side (a large corpus
    would otherwise convolve 100,000 counts of which a few hundred matter)."""
    from scipy.stats import beta, betabinom

    a, b = (
        (stratum.found + 1, stratum.coded - stratum.found)
        if upper
        else (stratum.found, stratum.coded - stratum.found + 1)
    )
    if a < 1e-9 or b < 1e-9:
        return (0 if a < 1e-9 else stratum.uncoded), np.ones(1)
    first = max(0, math.floor(stratum.uncoded * beta.ppf(1e-12, a, b)) - 10)
    last = min(stratum.uncoded, math.ceil(stratum.uncoded * beta.isf(1e-12, a, b)) + 10)
    return first, betabinom.pmf(np.arange(first, last + 1), stratum.uncoded, a, b)


def _note(strata: list[_Stratum], coded: int) -> str | None:
    """What a reader must know of a share whose interval is wide for want of gold: a model's answer
    no coded document had, while uncoded documents have it."""
    empty = [s for s in strata if not s.coded and s.uncoded]
    return (
        None
        if not empty
        else (
            f"none of the {coded} coded documents is one the model answered {'with' if empty[0].answer else 'without'} "
            f"this value: what share of those {empty[0].uncoded} take it is unknown (0 to 100 %); code more at random"
        )
    )


def _exact(successes: float, trials: float) -> tuple[float, float]:
    """The Clopper–Pearson 95 % interval (statsmodels' `proportion_confint`, "beta"), for an
    effective, not necessarily whole, number of trials."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, trials, alpha=1 - LEVEL, method="beta")
    return float(low), float(high)


def residual_variance(y: np.ndarray, y_hat: np.ndarray, w: np.ndarray) -> float:
    """n times the variance of the weighted mean of the model's error Y − Ŷ on the coded sample (its
    s² when unweighted)."""
    residual = y - y_hat
    centred = residual - np.average(residual, weights=w)
    return float(np.sum(w**2 * centred**2) / np.sum(w) ** 2 * len(y) ** 2 / (len(y) - 1))


def coded_for(rows: pl.DataFrame, width: float) -> int | None:
    """Documents to code (in all, at random) for the corrected 95 % interval of this share to be
    `width` wide: the least n with z·√(σ²_Δ/n + σ²_Ŷ/(N − n)) ≤ width/2, where σ²_Δ is the sample's
    variance of the model's error, σ²_Ŷ that of the model's answers and N the documents classified
    (coding one moves it out of the uncoded). The normal approximation of the difference
    estimator (λ = 1): a plan, not a bound; the interval `estimate` gives is exact or conservative,
    so on a rare value somewhat wider. None below MIN_CODED_FOR_PLANNING coded documents, or when no n
    reaches the width: the interval is of the share in the population the corpus is drawn from, and a
    small corpus alone leaves it wider."""
    planned = _planned_widths(rows)
    if planned is None:
        return None
    n, widths = planned
    reached = n[widths <= width]
    return int(reached[0]) if len(reached) else None


def narrowest_width(rows: pl.DataFrame) -> float | None:
    """The narrowest corrected interval coding more documents at random could give this share (plain
    PPI, as coded_for): on a small corpus a width below it is out of reach. None where coded_for is."""
    planned = _planned_widths(rows)
    return None if planned is None else float(planned[1].min())


def _planned_widths(rows: pl.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """(n, the corrected interval's width with n documents coded) for every n the corpus allows."""
    from scipy.stats import norm

    coded = rows.filter(pl.col("gold").is_not_null())
    if coded.height < MIN_CODED_FOR_PLANNING:
        return None
    z = norm.ppf(1 - (1 - LEVEL) / 2)
    error_variance = float(np.var(coded["gold"].to_numpy() - coded["model"].to_numpy(), ddof=1))
    answer_variance = float(np.var(rows["model"].to_numpy(), ddof=1))
    n = np.arange(2, rows.height - 1)
    return n, 2 * z * np.sqrt(error_variance / n + answer_variance / (rows.height - n))


def corpus_coded_for(rows: pl.DataFrame, width: float) -> int | None:
    """Documents to code (in all, at random) for this corpus's own share to have a 95 % interval
    `width` wide: n₀/(1 + n₀/N) with n₀ = (z·s_Δ/(width/2))², s²_Δ the coded sample's variance of the
    model's error Y − Ŷ and N the documents classified (the finite-population correction: coding all N
    leaves no interval). λ = 1 and normal, as coded_for: a plan, not a bound. None below
    MIN_CODED_FOR_PLANNING coded documents."""
    from scipy.stats import norm

    coded = rows.filter(pl.col("gold").is_not_null())
    if coded.height < MIN_CODED_FOR_PLANNING:
        return None
    y, y_hat, w = (coded[c].to_numpy() for c in ("gold", "model", "weight"))
    z = norm.ppf(1 - (1 - LEVEL) / 2)
    first = (z / (width / 2)) ** 2 * residual_variance(y, y_hat, w)
    return min(rows.height, math.ceil(first / (1 + first / rows.height)))


def corrected_shares(label_rows: pl.DataFrame, codebook: Codebook, width: float = 0.10) -> pl.DataFrame:
    """CORRECTED_SCHEMA: per (variable, value) the model-only, coders-only and corrected shares with
    their 95 % intervals, and `coded_for_width`: documents to code in all for a corrected interval
    `width` wide (see coded_for), and `corpus_coded_for_width` the same for this corpus's own share
    (see corpus_coded_for)."""
    rows = []
    for (variable, value), group in label_rows.group_by("variable", "value", maintain_order=True):
        rows.append(
            {
                "variable": variable,
                "value": value,
                **estimate(group),
                "coded_for_width": coded_for(group, width),
                "narrowest_width": narrowest_width(group),
                "corpus_coded_for_width": corpus_coded_for(group, width),
                "missing_gold": 0,
            }
        )
    frame = pl.DataFrame(rows, schema={k: v for k, v in CORRECTED_SCHEMA.items() if k != "label"})
    order = {name: i for i, name in enumerate(codebook.variables)}
    return (
        _labelled(frame, codebook)
        .with_columns(pl.col("variable").replace_strict(order, default=len(order)).alias("_order"))
        .sort("_order", "model_share", descending=[False, True])
        .drop("_order")
        .select(*CORRECTED_SCHEMA)
    )


def with_gold_taken_as(label_rows: pl.DataFrame, missing: pl.DataFrame, fill: float) -> pl.DataFrame:
    """`label_rows` with each drawn document that has no gold for a variable (`missing`: variable,
    doc_id, weight) coded as `fill` for every value of it: 0.0, it takes none; 1.0, it takes each."""
    joined = label_rows.join(
        missing.select("variable", "doc_id", pl.col("weight").alias("_drawn")), on=["variable", "doc_id"], how="left"
    )
    return joined.with_columns(
        pl.when(pl.col("_drawn").is_not_null()).then(pl.lit(fill)).otherwise(pl.col("gold")).alias("gold"),
        pl.coalesce("_drawn", "weight").alias("weight"),
    ).drop("_drawn")


def worst_case_shares(
    label_rows: pl.DataFrame, missing: pl.DataFrame, codebook: Codebook, width: float = 0.10
) -> pl.DataFrame:
    """corrected_shares when drawn documents have no gold (`missing`: variable, doc_id, weight): they
    are the hard ones, so dropping them would measure the model on the easy ones. Each share is
    computed with their gold taken as 0 and as 1; its interval runs from the lower of the two lows to
    the higher of the two highs (a worst-case bound, Manski's), its share is the middle of the two, and
    `missing_gold` counts them. With nothing missing it is corrected_shares exactly."""
    if missing.is_empty():
        return corrected_shares(label_rows, codebook, width)
    low, high = (
        corrected_shares(with_gold_taken_as(label_rows, missing, fill), codebook, width) for fill in (0.0, 1.0)
    )
    keys = ["variable", "value"]
    both = low.join(high, on=keys, suffix="_1", how="left")
    bounded = [
        expression
        for name in BOUNDED
        for expression in (
            ((pl.col(f"{name}_share") + pl.col(f"{name}_share_1")) / 2).alias(f"{name}_share"),
            pl.min_horizontal(f"{name}_low", f"{name}_low_1").alias(f"{name}_low"),
            pl.max_horizontal(f"{name}_high", f"{name}_high_1").alias(f"{name}_high"),
        )
    ]
    planned = [
        pl.max_horizontal(c, f"{c}_1").alias(c) for c in ("coded_for_width", "corpus_coded_for_width", "corrected_se")
    ]
    counts = missing.group_by("variable").agg(pl.len().cast(pl.Int64).alias("_missing"))
    return (
        both.with_columns(*bounded, *planned)
        .join(counts, on="variable", how="left")
        .with_columns(
            (pl.col("coded") - pl.col("_missing").fill_null(0)).alias("coded"),
            pl.col("_missing").fill_null(0).alias("missing_gold"),
        )
        .select(*CORRECTED_SCHEMA)
    )


def corrected_by_group(
    label_rows: pl.DataFrame, missing: pl.DataFrame, groups: dict[str, str], codebook: Codebook, width: float = 0.10
) -> pl.DataFrame:
    """GROUP_SCHEMA: worst_case_shares within each group (a year, a source; `groups` maps doc_id to
    it), from the group's own coded documents, so a trend rests on corrected shares, not on the model's
    labels. `coded` is the group's own; a group with fewer than MIN_CODED_PER_GROUP coded documents is
    too thin to correct and its estimates are left empty (the model's share stays, for what it is)."""
    mapping = pl.DataFrame(
        {"doc_id": list(groups), "group": [str(g) for g in groups.values()]},
        schema={"doc_id": pl.String, "group": pl.String},
    )
    rows = label_rows.join(mapping, on="doc_id", how="left").with_columns(pl.col("group").fill_null("unknown"))
    empty = [pl.lit(math.nan).alias(f"{name}_{part}") for name in BOUNDED for part in ("share", "low", "high")]
    frames = []
    for (group,), part in rows.group_by("group", maintain_order=True):
        own = missing.filter(pl.col("doc_id").is_in(part["doc_id"].unique().implode()))
        table = worst_case_shares(part.drop("group"), own, codebook, width)
        thin = table.filter(pl.col("coded") < MIN_CODED_PER_GROUP).with_columns(
            *empty, pl.lit(math.nan).alias("corrected_se")
        )
        table = pl.concat([table.filter(pl.col("coded") >= MIN_CODED_PER_GROUP), thin])
        frames.append(table.select(pl.lit(group).alias("group"), pl.all()))
    if not frames:
        return pl.DataFrame(schema=GROUP_SCHEMA)
    return pl.concat(frames).select(*GROUP_SCHEMA).sort("group", "variable", "value")


def group_difference(by_group: pl.DataFrame, first: str, second: str) -> pl.DataFrame:
    """DIFFERENCE_SCHEMA: per (variable, value), the corrected share of group `second` minus that of
    `first`, with its 95 % interval difference ± z·√(se₁² + se₂²): the two groups' coded documents are
    disjoint draws, so their estimates are independent. None (`why_not` says) for a group too thin, or
    with drawn documents without gold (its shares are bounds, not estimates)."""
    from scipy.stats import norm

    z = norm.ppf(1 - (1 - LEVEL) / 2)
    a = by_group.filter(pl.col("group") == first)
    b = by_group.filter(pl.col("group") == second)
    rows = []
    for row in a.join(b, on=["variable", "value"], suffix="_2").iter_rows(named=True):
        why = (
            "too few coded in a group"
            if min(row["coded"], row["coded_2"]) < MIN_CODED_PER_GROUP
            else "drawn documents without gold: bounds only"
            if row["missing_gold"] or row["missing_gold_2"]
            else "no corrected estimate"
            if not (row["corrected_se"] >= 0 and row["corrected_se_2"] >= 0)
            else None
        )
        difference = math.nan if why else row["corrected_share_2"] - row["corrected_share"]
        half = math.nan if why else z * math.sqrt(row["corrected_se"] ** 2 + row["corrected_se_2"] ** 2)
        rows.append(
            {
                "variable": row["variable"],
                "value": row["value"],
                "label": row["label"],
                "first": first,
                "second": second,
                "difference": difference,
                "low": difference - half,
                "high": difference + half,
                "why_not": why,
            }
        )
    return pl.DataFrame(rows, schema=DIFFERENCE_SCHEMA)


def still_to_code(corrected: pl.DataFrame, planned: str = "coded_for_width") -> dict[str, int | None]:
    """Per variable: how many more random documents to code for every one of its shares to reach the
    width (the widest share decides); None where it cannot be planned or reached. `planned`: the
    column that plans it, `coded_for_width` (the population's share) or `corpus_coded_for_width`."""
    out: dict[str, int | None] = {}
    for (variable,), group in corrected.group_by("variable", maintain_order=True):
        needed = group[planned]
        out[variable] = None if needed.null_count() else max(0, int(needed.max()) - int(group["coded"].max()))
    return out


def model_errors(label_rows: pl.DataFrame, codebook: Codebook) -> pl.DataFrame:
    """ERRORS_SCHEMA: per (variable, value), the model against the gold on the random coded documents.
    Of the documents the coders gave the value, the share the model gave it too (sensitivity); of the
    others, the share it gave it anyway (false alarms); each with its Wilson 95 % interval. These two
    errors are what moves a corrected share away from the model's, and what widens its interval.
    Counted per document, unweighted: with a stratified draw they describe the sample, not the corpus."""
    rows = []
    coded = label_rows.filter(pl.col("gold").is_not_null())
    for (variable, value), group in coded.group_by("variable", "value", maintain_order=True):
        with_value, without = group.filter(pl.col("gold") == 1.0), group.filter(pl.col("gold") == 0.0)
        found, alarms = int(with_value["model"].sum()), int(without["model"].sum())
        low, high = wilson(found, with_value.height)
        alarm_low, alarm_high = wilson(alarms, without.height)
        rows.append(
            {
                "variable": variable,
                "value": value,
                "coded_with": with_value.height,
                "found": found,
                "sensitivity": found / with_value.height if with_value.height else math.nan,
                "sensitivity_low": low,
                "sensitivity_high": high,
                "coded_without": without.height,
                "false_alarms": alarms,
                "false_alarm_rate": alarms / without.height if without.height else math.nan,
                "false_alarm_low": alarm_low,
                "false_alarm_high": alarm_high,
            }
        )
    frame = pl.DataFrame(rows, schema={k: v for k, v in ERRORS_SCHEMA.items() if k != "label"})
    return _labelled(frame, codebook).select(*ERRORS_SCHEMA).sort("variable", "value")


def tightest(found: list[CorrectedFindings]) -> pl.DataFrame:
    """TIGHTEST_SCHEMA: per model, the width of its corrected 95 % intervals for this corpus over every
    share that has one (their mean, and the widest with its share), tightest first. The model to
    classify with is the one whose corrected findings are narrowest on the same coded documents: the
    gold corrects any model's bias, and what is left of a model's quality is how much it narrows the
    interval. This corpus's interval, not the population's: the population's adds the corpus being a
    draw, the same for every model, which in a small corpus hides the models' difference."""
    rows = []
    for each in found:
        widths = each.table.with_columns((pl.col("corpus_high") - pl.col("corpus_low")).alias("width")).filter(
            pl.col("width").is_not_nan() & pl.col("width").is_not_null()
        )
        widest = widths.sort("width", descending=True).row(0, named=True) if widths.height else None
        rows.append(
            {
                "model": each.model,
                "coded": each.coded,
                "shares": widths.height,
                "mean_width": float(widths["width"].mean()) if widths.height else math.nan,
                "widest": widest["width"] if widest else math.nan,
                "widest_share": f"{widest['variable']} = {widest['label']}" if widest else None,
            }
        )
    return pl.DataFrame(rows, schema=TIGHTEST_SCHEMA).sort("mean_width", nulls_last=True)
