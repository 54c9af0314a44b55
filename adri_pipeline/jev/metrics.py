"""Decision metrics with their definitions stated, each a plain function of arrays.

- high-confidence wrong-route rate: share of ALL decisions that are wrong with confidence >= t.
- Brier: mean over decisions of sum over the offered options of (p - 1[gold])^2.
- ECE / MCE: equal-width bins over confidence (10 by default); ECE = sum_b n_b/n |acc_b - conf_b|,
  MCE = max_b |acc_b - conf_b| over non-empty bins.
- selective accuracy x coverage: decisions sorted by confidence, descending; AURC = mean selective
  risk (1 - selective accuracy) over the n coverage levels k/n.
- risk at coverage c: the share wrong among the ceil(c n) most confident decisions (the risk-coverage
  curve read at one point; c = 1 is the error rate). "Its 40 % most confident answers are 10 % wrong."
- conformal prediction set (split conformal, LAC score; Sadinle, Lei and Wasserman 2019): with q the
  ceil((m+1)(1-a))-th smallest of 1 - p(gold) over m calibration decisions, a decision's set holds every
  option with p >= 1 - q; a new exchangeable decision's gold is in its set with probability >= 1 - a.
- out of scope (Larson et al., EMNLP 2019, CLINC150): out-of-scope recall = share of the out-of-scope
  requests not routed to an intent (answered with the no-match option, or below the threshold: handed
  back); in-scope accuracy on the accepted = share right among the in-scope requests routed to an
  intent at or above the threshold; in-scope coverage = share of in-scope requests so routed.
- D4 set-F1: per request, F1 between the options answered "sim" and the gold set (both empty = 1).

scikit-learn is imported inside the functions that use it: the mirror gate, which sits in a production
agent, loads this module's NotEnoughData and must not load scikit-learn.
"""

from __future__ import annotations

import warnings
from functools import wraps

import numpy as np
from pydantic import BaseModel, ConfigDict


def _quiet(fn):
    """Small test slices often hold one label; sklearn warns about that, the figures stay right."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*args, **kwargs)

    return wrapper


def accuracy(gold, predicted) -> float:
    """Share of decisions whose answer equals the gold; NaN with none. (Answers are any hashable labels,
    None included, which sklearn's accuracy_score refuses to mix with strings.)"""
    gold, predicted = np.asarray(gold, dtype=object), np.asarray(predicted, dtype=object)
    return float((gold == predicted).mean()) if len(gold) else float("nan")


@_quiet
def macro_f1(gold, predicted) -> float:
    """Unweighted mean over the gold's labels of each label's F1 (sklearn's f1_score, average="macro");
    a label never predicted counts 0."""
    from sklearn.metrics import f1_score

    labels = sorted(set(gold))
    return float(f1_score(gold, predicted, labels=labels, average="macro", zero_division=0))


@_quiet
def per_class(gold, predicted) -> dict[str, dict]:
    """Per label (gold or predicted): precision, recall, F1 and support (sklearn's
    precision_recall_fscore_support); 0 where a ratio has no denominator."""
    from sklearn.metrics import precision_recall_fscore_support

    labels = sorted(set(gold) | set(predicted))
    p, r, f, n = precision_recall_fscore_support(gold, predicted, labels=labels, zero_division=0)
    return {
        label: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(n[i])}
        for i, label in enumerate(labels)
    }


@_quiet
def confusion(gold, predicted) -> dict:
    """The confusion matrix (sklearn's; rows gold, columns predicted) over the sorted union of labels."""
    from sklearn.metrics import confusion_matrix

    labels = sorted(set(gold) | set(predicted))
    return {"labels": labels, "matrix": confusion_matrix(gold, predicted, labels=labels).tolist()}


def high_confidence_wrong_rate(correct, confidence, threshold: float = 0.85) -> float:
    """Share of ALL decisions that are wrong with confidence >= `threshold` (not of the confident ones:
    the rate a user meets a confident wrong route); NaN with none."""
    correct, confidence = np.asarray(correct, bool), np.asarray(confidence, float)
    return float(((~correct) & (confidence >= threshold)).mean()) if len(correct) else float("nan")


def brier(probabilities: list[dict[str, float]], gold: list[str]) -> float:
    """Mean over decisions of the sum over the options offered of (p - 1[option is gold])^2, plus 1 when
    the gold was not offered. Hand-written: each decision offers its own options, where sklearn's
    brier_score_loss wants one label set for all."""
    scores = [
        sum((p - (option == g)) ** 2 for option, p in probs.items()) + (0.0 if g in probs else 1.0)
        for probs, g in zip(probabilities, gold)
    ]
    return float(np.mean(scores)) if scores else float("nan")


def calibration_bins(correct, confidence, bins: int = 10) -> list[dict]:
    """Equal-width confidence bins over [0, 1], each with its count, accuracy and mean confidence (None
    when empty). Hand-written: sklearn's calibration_curve drops empty bins and returns no counts, which
    the reliability table and ECE need."""
    correct, confidence = np.asarray(correct, float), np.asarray(confidence, float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    return [
        {
            "low": float(edges[b]),
            "high": float(edges[b + 1]),
            "count": int((index == b).sum()),
            "accuracy": float(correct[index == b].mean()) if (index == b).any() else None,
            "confidence": float(confidence[index == b].mean()) if (index == b).any() else None,
        }
        for b in range(bins)
    ]


def ece_mce(correct, confidence, bins: int = 10) -> tuple[float, float]:
    """ECE = sum_b n_b/n |acc_b - conf_b| and MCE = max_b |acc_b - conf_b| over the non-empty bins of
    calibration_bins; NaN with no decision."""
    n = len(correct)
    gaps = [
        (b["count"], abs(b["accuracy"] - b["confidence"]))
        for b in calibration_bins(correct, confidence, bins)
        if b["count"]
    ]
    if not gaps:
        return float("nan"), float("nan")
    return float(sum(c * g for c, g in gaps) / n), float(max(g for _, g in gaps))


def selective_curve(correct, confidence) -> tuple[np.ndarray, np.ndarray]:
    """(coverage, selective accuracy) at each k = 1..n, most confident first (stable on ties)."""
    correct, confidence = np.asarray(correct, float), np.asarray(confidence, float)
    order = np.argsort(-confidence, kind="stable")
    hits = np.cumsum(correct[order])
    k = np.arange(1, len(correct) + 1)
    return k / len(correct), hits / k


def aurc(correct, confidence) -> float:
    """Area under the risk-coverage curve: mean selective risk (1 - selective accuracy) over the n coverage
    levels k/n of selective_curve; lower is better, NaN with no decision."""
    if not len(correct):
        return float("nan")
    _, selective_accuracy = selective_curve(correct, confidence)
    return float(np.mean(1.0 - selective_accuracy))


def risk_at_coverage(correct, confidence, coverage: float) -> float:
    """Share wrong among the ceil(coverage x n) most confident decisions (ties in input order, as
    selective_curve); NaN with no decision."""
    correct, confidence = np.asarray(correct, float), np.asarray(confidence, float)
    if not len(correct):
        return float("nan")
    kept = max(1, int(np.ceil(coverage * len(correct) - 1e-9)))
    order = np.argsort(-confidence, kind="stable")
    return float(1.0 - correct[order][:kept].mean())


def conformal_quantile(gold_probabilities, alpha: float) -> float:
    """The LAC score's conformal quantile q over calibration decisions (`gold_probabilities`: each
    decision's probability of its gold option). inf when too few decisions for 1 - alpha (every
    option is then in every set: nothing can be promised with fewer)."""
    scores = np.sort(1.0 - np.asarray(gold_probabilities, float))
    rank = int(np.ceil((len(scores) + 1) * (1 - alpha)))
    return float(scores[rank - 1]) if 1 <= rank <= len(scores) else float("inf")


def conformal_quantile_per_group(gold_probabilities, group, alpha: float, delta: float) -> float:
    """The LAC quantile for one new group (an author's turns): each group's own conformal quantile at
    1 - alpha, then the k-th smallest of them, k = ceil((1 - delta)(G + 1)) of G groups, the split-conformal
    quantile over groups. A new group's own quantile is at or below it with probability >= k / (G + 1), and
    its sets then cover 1 - alpha of its decisions (as far as its quantile, read off its own decisions,
    is). Pooled over decisions (`conformal_quantile`), the sets cover 1 - alpha on average over decisions,
    so a group harder than the mix falls below it. A group too small to state its own quantile at 1 - alpha
    (fewer than 9 decisions at 0.10: its quantile is inf) is left out, as nothing about it can be stated: kept,
    one such group would put every option in every set. inf when the groups left are too few for 1 - delta
    (fewer than 9 at 0.10)."""
    gold, group = np.asarray(gold_probabilities, float), np.asarray(group)
    own = sorted(q for name in np.unique(group) if np.isfinite(q := conformal_quantile(gold[group == name], alpha)))
    rank = int(np.ceil((1 - delta) * (len(own) + 1)))
    return float(own[rank - 1]) if rank <= len(own) else float("inf")


def conformal_set(probabilities: dict[str, float], quantile: float) -> list[str]:
    """The options whose probability is at least 1 - quantile, most probable first."""
    return [
        option for option, p in sorted(probabilities.items(), key=lambda item: -item[1]) if p >= 1.0 - quantile - 1e-12
    ]


def selective_at(correct, confidence, threshold: float) -> tuple[float, float]:
    """(coverage, accuracy among decisions with confidence >= threshold)."""
    correct, confidence = np.asarray(correct, bool), np.asarray(confidence, float)
    kept = confidence >= threshold
    return float(kept.mean()), float(correct[kept].mean()) if kept.any() else float("nan")


def out_of_scope(gold, predicted, confidence, threshold: float, no_match: str) -> dict[str, float | int]:
    """Out-of-scope recall, in-scope accuracy on the accepted and in-scope coverage (module docstring);
    NaN where a side has no request."""
    gold, predicted = np.asarray(gold, object), np.asarray(predicted, object)
    routed = (predicted != no_match) & (np.asarray(confidence, float) >= threshold)
    outside, inside = gold == no_match, gold != no_match
    accepted = inside & routed

    def share(numerator, denominator) -> float:
        return float(numerator.sum() / denominator.sum()) if denominator.any() else float("nan")

    return {
        "out_of_scope": int(outside.sum()),
        "in_scope": int(inside.sum()),
        "out_of_scope_recall": share(outside & ~routed, outside),
        "in_scope_accuracy_on_accepted": share(accepted & (predicted == gold), accepted),
        "in_scope_coverage": share(accepted, inside),
    }


def set_f1(predicted_sets: list[set], gold_sets: list[set]) -> float:
    """Mean per-example F1 of the predicted set against the gold set (two empty sets agree fully)."""
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    if not gold_sets:
        return float("nan")
    binarizer = MultiLabelBinarizer().fit([*predicted_sets, *gold_sets, {""}])  # {""}: never an empty label space
    return float(
        f1_score(
            binarizer.transform(gold_sets), binarizer.transform(predicted_sets), average="samples", zero_division=1.0
        )
    )


MIN_RESAMPLED = 2  # a bootstrap of one observation can only draw it again: no spread to show


class NotEnoughData(BaseModel):
    """A figure the data given cannot support, said as such instead of nan or an exception: where an
    interval would be (JSON: {"n": 1, "reason": "not enough data (n = 1)"}), in reports and verdicts."""

    model_config = ConfigDict(frozen=True)

    n: int
    reason: str

    @classmethod
    def at(cls, n: int, detail: str = "") -> "NotEnoughData":
        return cls(n=n, reason=f"not enough data (n = {n})" + (f": {detail}" if detail else ""))

    def __str__(self) -> str:
        return self.reason


Interval = tuple[float, float] | NotEnoughData


def bootstrap_interval(
    statistic, n: int, rng: np.random.Generator, resamples: int = 1000, level: float = 0.95
) -> Interval:
    """Percentile bootstrap (scipy.stats.bootstrap) of `statistic(positions)` over draws of n positions
    in range(n) with replacement, so paired or weighted statistics resample whole examples. Below
    MIN_RESAMPLED observations, or where a draw leaves the statistic undefined (None or nan), there is
    too little data to say: NotEnoughData, which scipy (an error at n = 1) does not give."""
    import warnings

    from scipy.stats import DegenerateDataWarning, bootstrap

    if n < MIN_RESAMPLED:
        return NotEnoughData.at(n)

    def on_positions(positions: np.ndarray) -> float:
        value = statistic(positions.astype(int))
        return float("nan") if value is None else float(value)

    with warnings.catch_warnings():  # an undefined draw: NotEnoughData, as documented, not a warning
        warnings.simplefilter("ignore", DegenerateDataWarning)
        result = bootstrap(
            (np.arange(n),),
            on_positions,
            n_resamples=resamples,
            confidence_level=level,
            method="percentile",
            vectorized=False,
            rng=rng,
        )
    low, high = (float(end) for end in result.confidence_interval)
    if not (np.isfinite(low) and np.isfinite(high)):
        return NotEnoughData.at(n, "the statistic is undefined on some resamples")
    return low, high


# the fewest clusters clustered_share_interval draws over: in a simulation of clusters of 10 decisions, each
# with its own rate (Beta(4.5, 0.5)), its 95 % interval held the mean rate in 77 % of 200 draws with 5
# clusters and 90 % with 9, 12 or 20 (2026-12-07): with fewer, what it prints would mislead
MIN_CLUSTERS = 8


def clustered_share_interval(hits, clusters, rng: np.random.Generator, level: float = 0.95) -> Interval:
    """The share of `hits` with a percentile bootstrap interval drawn over whole clusters (bootstrap_interval
    over cluster positions; each draw's share is its clusters' hits over their decisions). Where decisions
    come in clusters that are alike inside — a catalogue's turns — a draw of single decisions understates
    how far the share of a new set of clusters can fall: the cluster is the unit that varies. Fewer than
    MIN_CLUSTERS clusters: NotEnoughData."""
    hits = np.asarray(hits, float)
    names, cluster_of = np.unique(np.asarray(clusters, object).astype(str), return_inverse=True)
    if len(names) < MIN_CLUSTERS:
        return NotEnoughData.at(len(names), f"fewer than {MIN_CLUSTERS} clusters to draw over")
    sums = np.bincount(cluster_of, weights=hits, minlength=len(names))
    sizes = np.bincount(cluster_of, minlength=len(names)).astype(float)
    return bootstrap_interval(lambda drawn: sums[drawn].sum() / sizes[drawn].sum(), len(names), rng, level=level)


def interval_text(interval: Interval | list, digits: int = 3) -> str:
    """ "[low, high]", or why there is no interval."""
    if isinstance(interval, NotEnoughData):
        return interval.reason
    low, high = interval
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def percentiles(values, points=(50, 95, 99)) -> dict[str, float]:
    """{"p50": ..., "p95": ..., "p99": ...} of `values` (numpy's linear interpolation); {} with none."""
    values = np.asarray(values, float)
    return {f"p{p}": float(np.percentile(values, p)) for p in points} if len(values) else {}


def cost_per_thousand(total_seconds: float, decisions: int, hourly_price: float) -> float:
    """What 1,000 decisions cost at `hourly_price` per hour of the machine, from the seconds `decisions`
    took; NaN with none."""
    return hourly_price * total_seconds / 3600 / decisions * 1000 if decisions else float("nan")


def krippendorff_alpha_nominal(annotations: list[list[str | None]]) -> float:
    """Krippendorff's alpha for nominal labels (the `krippendorff` package); one inner list per item,
    one entry per annotator (None = not annotated). nan with fewer than two pairable values; 1.0 when
    every annotator used one and the same label."""
    import krippendorff

    labels = sorted({v for item in annotations for v in item if v is not None})
    pairable = sum(
        len([v for v in item if v is not None]) for item in annotations if len([v for v in item if v is not None]) >= 2
    )
    if pairable <= 1:
        return float("nan")
    if len(labels) == 1:
        return 1.0
    code = {label: i for i, label in enumerate(labels)}
    data = np.full((max(len(item) for item in annotations), len(annotations)), np.nan)
    for column, item in enumerate(annotations):
        for row, value in enumerate(item):
            if value is not None:
                data[row, column] = code[value]
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def annotator_agreement(first: list[str], second: list[str]) -> dict[str, float]:
    """Two annotations of the same examples: percent agreement, Cohen's kappa, Krippendorff's alpha."""
    from sklearn.metrics import cohen_kappa_score

    return {
        "agreement": accuracy(first, second),
        "cohen_kappa": float(cohen_kappa_score(first, second)),
        "krippendorff_alpha": krippendorff_alpha_nominal([[a, b] for a, b in zip(first, second)]),
    }
