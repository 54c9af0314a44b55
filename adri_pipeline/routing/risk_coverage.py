"""The report's headline: how wrong a candidate is among the decisions it answers, at each share it
answers (the risk-coverage curve), in source and on every set it was not fitted on; then its conformal
prediction sets, which turn "not sure between these" into a clarifying question.

A threshold that certifies a bound by answering nothing is safe but useless: a router switched on
with it routes none of a new catalogue's turns. So each candidate's verdict line says, per set, how
much its certified threshold answers, and names the sets where that is nothing ("safe but mute")."""

from __future__ import annotations

from adri_pipeline.jev.metrics import MIN_CLUSTERS, NotEnoughData
from adri_pipeline.routing.evaluation import RISK_COVERAGES
from adri_pipeline.routing.out_of_source import OutsideSet
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.results import CandidateResult, PredictionSets, TaskFigures, mute


def _pct(value) -> str:
    return "—" if value is None or value != value else f"{value:.0%}"


def _rows(
    result: CandidateResult, task: str, outside: list[OutsideSet], test_set: str
) -> list[tuple[str, TaskFigures]]:
    """(test set as the report names it, its figures): in source first, then each out-of-source set."""
    labels = {s.name: s.label for s in outside}
    return [(test_set, result.tasks[task])] + [
        (labels[source](task) if source in labels else source, tasks[task])
        for source, tasks in result.out_of_source.items()
        if task in tasks
    ]


def headline(
    results: dict[str, CandidateResult], outside: list[OutsideSet], config: RunConfig, test_set: str = "in source"
) -> list[str]:
    """The risk-coverage table and each candidate's verdict on what its threshold answers."""
    coverages = [f"{c:.0%}" for c in RISK_COVERAGES]
    lines = [
        "## Risk and coverage",
        "",
        "Wrong among the answered, when a candidate answers only its most confident decisions: "
        '"at 40 %" is the share wrong among the 40 % it is surest of (100 %: the error rate). A '
        "confidence that ranks makes the left columns low. `answered@thr`: the share its certified "
        "abstention threshold answers; `wrong@thr`: the share of all decisions answered wrongly there "
        "(the bound below limits it). AURC: the mean of the curve (lower is better).",
        "",
        "| candidate | task | test set | n | "
        + " | ".join(f"wrong at {c}" for c in coverages)
        + " | AURC | answered@thr | wrong@thr |",
        "|---" * (7 + len(coverages)) + "|",
    ]
    for name, result in results.items():
        for task in result.tasks:
            lines += [
                f"| {name} | {task} | {where} | {f.n} | "
                + " | ".join(_pct(f.risk_at_coverage.get(c)) for c in coverages)
                + f" | {f.aurc:.3f} | {_pct(f.coverage_at_threshold)} | {_pct(f.high_confidence_wrong_rate)} |"
                for where, f in _rows(result, task, outside, test_set)
            ]
    lines += ["", *(verdict(name, result.tasks, result.out_of_source) for name, result in results.items()), ""]
    return lines + prediction_sets(results, outside, config, test_set) + out_of_scope(results, outside, test_set)


def verdict(name: str, tasks: dict[str, TaskFigures], out_of_source: dict[str, dict[str, TaskFigures]]) -> str:
    """One line per candidate: what its certified threshold answers, "safe but mute" where nothing."""
    silent = mute(out_of_source)
    if not out_of_source:
        return (
            f"- **{name}**: no out-of-source set measured; in source its threshold answers "
            + ", ".join(f"{task} {_pct(f.coverage_at_threshold)}" for task, f in tasks.items())
            + "."
        )
    if silent:
        return (
            f"- **{name}: safe but mute** out of source — its certified threshold answers none of "
            f"{', '.join(silent)}: switched on there, it would route nothing and ask every time."
        )
    return f"- **{name}**: its certified threshold answers some of every out-of-source set."


def prediction_sets(
    results: dict[str, CandidateResult], outside: list[OutsideSet], config: RunConfig, test_set: str = "in source"
) -> list[str]:
    """The conformal sets' table: stated and observed coverage, and what a router would do."""
    rows = [
        (name, task, where, f.prediction_sets)
        for name, result in results.items()
        for task in result.tasks
        for where, f in _rows(result, task, outside, test_set)
        if f.prediction_sets is not None
    ]
    if not rows:
        return []
    lines = [
        "### Prediction sets: a clarifying question instead of a guess",
        "",
        f"Split conformal sets (jev/metrics.py), quantile from the calibration split: the gold is in a "
        f"decision's set with probability >= {config.set_coverage:.0%} when decisions are exchangeable with "
        f"calibration's (out of source they need not be: compare `coverage`). D2's quantile comes from the "
        "hand-written turns in the fit, each answered by a candidate fitted without its author's turns, per "
        "author (each author's own quantile, then the quantile over authors): its sets cover the stated share "
        f"of a new author's catalogue with probability >= {1 - config.threshold_delta:.0%} (with too few "
        "authors, by catalogue and pooled over turns: on average over them), and on D2 the "
        "coverage's 95 % interval is drawn over whole "
        "catalogues (a set of few catalogues can fall well below the stated coverage while the sets hold it "
        f"on average; a set of fewer than {MIN_CLUSTERS} catalogues has none). A set of one is answered; "
        f"2 to {config.question_max_options} options become a clarifying question naming them (D2's "
        "`desambiguar`); an empty or larger set abstains.",
        "",
        "| candidate | task | test set | stated | coverage | mean size | answered | asked | abstained | "
        "accuracy answered |",
        "|---" * 10 + "|",
    ]
    lines += [
        f"| {name} | {task} | {where} | {_pct(s.stated_coverage)} | {_pct(s.coverage)}{_across(s)} | "
        f"{s.mean_size:.2f} | {_pct(s.answered)} | {_pct(s.asked)} | {_pct(s.abstained)} | "
        f"{_pct(s.answered_accuracy)} |"
        for name, task, where, s in rows
    ]
    return lines + [""]


def _across(sets: PredictionSets) -> str:
    """ " [low, high] over N catalogues" after a D2 coverage, or why there is no interval."""
    across = sets.coverage_across_catalogues
    if across is None:
        return ""
    if isinstance(across.interval, NotEnoughData):
        return f" ({across.catalogues} catalogue{'s' * (across.catalogues != 1)}: too few for an interval)"
    low, high = across.interval
    return f" [{_pct(low)}, {_pct(high)}] over {across.catalogues} catalogues"


# Larson et al., "An Evaluation Dataset for Intent Classification and Out-of-Scope Prediction", EMNLP 2019,
# CLINC150 (full), as issue 56 quotes their table: BERT's in-scope accuracy and out-of-scope recall, and the
# best out-of-scope recall any classifier in that table reached
LARSON_2019 = {"BERT in-scope accuracy": 0.967, "BERT out-of-scope recall": 0.592, "best out-of-scope recall": 0.66}


def out_of_scope(
    results: dict[str, CandidateResult], outside: list[OutsideSet], test_set: str = "in source"
) -> list[str]:
    """D1 where the test holds out-of-scope requests: out-of-scope recall and in-scope accuracy on the
    accepted at the certified threshold (jev/metrics.out_of_scope), beside Larson et al.'s table."""
    rows = [
        (name, where + suffix, scope)
        for name, result in results.items()
        if "D1" in result.tasks
        for where, f in _rows(result, "D1", outside, test_set)
        for suffix, scope in [("", f.scope), *((f", {kind}", s) for kind, s in (f.scope_by_kind or {}).items())]
        if scope
    ]
    if not rows:
        return []
    lines = [
        "### Out of scope (D1)",
        "",
        "At the certified threshold, a request not routed to an intent (answered `sem_correspondencia`, or "
        "below the threshold and handed back) counts as rejected. Out-of-scope recall: the share of "
        "out-of-scope requests rejected; in-scope accuracy on the accepted: the share right among the "
        "in-scope requests routed; in-scope coverage: how many of them were routed. Larson et al. (EMNLP "
        "2019, CLINC150, no rejection threshold certified): BERT "
        + _pct(LARSON_2019["BERT in-scope accuracy"])
        + " in-scope accuracy with "
        + _pct(LARSON_2019["BERT out-of-scope recall"])
        + " out-of-scope recall; "
        "the best recall in their table " + _pct(LARSON_2019["best out-of-scope recall"]) + ". The first row "
        "of each set counts every out-of-scope request, most of them only missing their intent among the "
        'options; "annotated out of scope by the source": the requests the source itself says no intent '
        "serves (CLINC150's, Larson et al.'s sense); \"intents never fitted on\" (a dataset "
        "`<source>-unseen-intents`): a fifth of the source's intents left out of every split it fitted on, "
        "their requests asked among the other intents.",
        "",
        "| candidate | test set | out of scope | in scope | out-of-scope recall | in-scope accuracy on the "
        "accepted | in-scope coverage |",
        "|---" * 7 + "|",
    ]
    lines += [
        f"| {name} | {where} | {s['out_of_scope']} | {s['in_scope']} | {_pct(s['out_of_scope_recall'])} | "
        f"{_pct(s['in_scope_accuracy_on_accepted'])} | {_pct(s['in_scope_coverage'])} |"
        for name, where, s in rows
    ]
    return lines + [""]
