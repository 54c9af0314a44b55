"""The JEV design's hypotheses as verdicts: H1 non-inferiority against the LLM baseline, H2
abstention that helps, H3 latency and cost within budget."""

from __future__ import annotations

import numpy as np
import polars as pl

from adri_pipeline.jev import metrics
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.results import H1, H2, H3, CandidateResult, Hypotheses, NonInferiority, SelectiveGain
from adri_pipeline.routing.run import CandidateRun


def _non_inferiority(mine: pl.DataFrame, llm: pl.DataFrame, task: str, config: RunConfig, rng) -> NonInferiority:
    """Paired bootstrap of the accuracy difference (pp) on the same test examples (two candidates'
    predictions): non-inferior when the 95 % interval's lower end is above -margin (the JEV design H1,
    margin 3 pp)."""
    a = mine.filter(pl.col("task") == task).select("example_id", "correct")
    b = llm.filter(pl.col("task") == task).select("example_id", "correct")
    joined = a.join(b, on="example_id", suffix="_llm")
    diff = 100 * (joined["correct"].to_numpy().astype(float) - joined["correct_llm"].to_numpy().astype(float))
    interval = metrics.bootstrap_interval(lambda idx: float(diff[idx].mean()), len(diff), rng)
    minimum = h1_min_decisions(config)
    too_few = len(diff) < minimum or isinstance(interval, metrics.NotEnoughData)
    verdict = (
        "inconclusive"
        if too_few
        else "non-inferior"
        if interval[0] > -config.h1_margin_pp
        else "inferior"
        if interval[1] < -config.h1_margin_pp
        else "inconclusive"
    )
    reason = (
        f"{len(diff)} paired test decisions; a verdict needs at least {minimum}"
        if len(diff) < minimum
        else f"the gap's interval: {interval}"
        if isinstance(interval, metrics.NotEnoughData)
        else ""
    )
    return NonInferiority(
        verdict=verdict,
        n=len(diff),
        gap_pp=float(diff.mean()) if len(diff) else float("nan"),
        gap_ci95_pp=_as_list(interval),
        margin_pp=config.h1_margin_pp,
        min_decisions=minimum,
        reason=reason,
    )


def _as_list(interval: metrics.Interval) -> list[float] | metrics.NotEnoughData:
    return interval if isinstance(interval, metrics.NotEnoughData) else [float(end) for end in interval]


H1_DISCORDANCE = 0.10  # share of paired decisions on which two routers of similar accuracy disagree


def h1_min_decisions(config: RunConfig) -> int:
    """The fewest paired test decisions on which H1 may say anything: the n at which two routers of
    equal accuracy that disagree on 10 % of the decisions would have a 95 % interval of the accuracy
    gap inside the margin, n = (1.96 / margin)^2 x 0.10 (the gap's variance is the discordance / n).
    With 3 pp that is 427: below it, an interval narrow enough to call non-inferiority comes only from
    two models that agree almost always, or from luck — so the verdict is "inconclusive"."""
    if config.h1_min_decisions:
        return config.h1_min_decisions
    return int(np.ceil((1.96 / (config.h1_margin_pp / 100)) ** 2 * H1_DISCORDANCE))


# the tasks answered with a confidence a threshold can abstain on: D4's is the set's (the product of its
# yes/no answers' confidences), with a threshold of its own chosen on calibration
H2_TASKS = ("D1", "D2", "D3", "D4", "D5")


def _selective_gain(frame: pl.DataFrame, kept: np.ndarray, config: RunConfig, rng) -> SelectiveGain:
    """Accuracy among the decisions kept minus accuracy over all, with its bootstrap 95 % interval;
    helps when the interval is above zero and at least `h2_min_coverage` of the decisions are kept."""
    correct = frame["correct"].to_numpy().astype(float)
    interval = metrics.bootstrap_interval(
        lambda idx: correct[idx][kept[idx]].mean() - correct[idx].mean() if kept[idx].any() else None, len(correct), rng
    )
    coverage = float(kept.mean()) if len(kept) else 0.0
    helps = not isinstance(interval, metrics.NotEnoughData) and interval[0] > 0
    return SelectiveGain(
        verdict="supported" if helps and coverage >= config.h2_min_coverage else "not supported",
        n=len(correct),
        coverage=coverage,
        selective_accuracy=float(correct[kept].mean()) if kept.any() else float("nan"),
        full_coverage_accuracy=float(correct.mean()) if len(correct) else float("nan"),
        gain_ci95=_as_list(interval),
    )


def better_abstention(comparison: dict) -> str:
    """Of `abstention_comparison`'s two policies, the one with the higher accuracy on what it keeps,
    then the higher coverage; "equal" when neither wins, "neither" when both keep nothing (no accuracy
    to compare: a winner between two missing values is no answer)."""
    kept = {key: comparison[key]["coverage"] for key in ("explicit_d3", "derived_confidence")}
    if not any(kept.values()):
        return "neither (both abstain on every turn)"
    if not all(kept.values()):
        return "explicit (D3)" if kept["explicit_d3"] else "derived from confidence"
    score = {
        name: (round(comparison[key]["accuracy_on_kept"], 6), round(comparison[key]["coverage"], 6))
        for name, key in (("explicit (D3)", "explicit_d3"), ("derived from confidence", "derived_confidence"))
    }
    return max(score, key=score.get) if len(set(score.values())) > 1 else "equal"


def _abstention(predictions: pl.DataFrame, config: RunConfig, rng, comparison: dict | None = None) -> H2:
    """H2 on every task with a confidence the run answered: per task, abstaining below the threshold
    chosen on calibration must raise selective accuracy (interval above zero) without keeping fewer
    than `h2_min_coverage` of the decisions. Supported when it holds on every task evaluated; partly
    when on some. `comparison` (abstention_comparison): D3's explicit abstention against the one derived
    from confidence, on the turns that have both, with which did better."""
    per_task = {}
    for task in H2_TASKS:
        frame = predictions.filter(pl.col("task") == task)
        if frame.height:
            kept = frame["confidence"].to_numpy() >= frame["threshold"].to_numpy()
            per_task[task] = _selective_gain(frame, kept, config, rng)
    supported = [t for t, v in per_task.items() if v.verdict == "supported"]
    verdict = (
        "not evaluated"
        if not per_task
        else "supported"
        if len(supported) == len(per_task)
        else f"partly supported ({', '.join(supported)})"
        if supported
        else "not supported"
    )
    why = "; ".join(
        f"{task}: keeps {v.coverage:.0%} of decisions (at least {config.h2_min_coverage:.0%} needed)"
        if v.coverage < config.h2_min_coverage
        else f"{task}: the gain's 95 % interval: {v.gain_ci95}"
        if isinstance(v.gain_ci95, metrics.NotEnoughData)
        else f"{task}: the gain's 95 % interval {metrics.interval_text(v.gain_ci95)} is not above zero"
        for task, v in per_task.items()
        if v.verdict != "supported"
    )
    return H2(
        verdict=verdict,
        min_coverage=config.h2_min_coverage,
        tasks=per_task,
        reason=why if per_task else "no task answered with a confidence to abstain on",
        d3_explicit_vs_confidence={**comparison, "better": better_abstention(comparison)} if comparison else None,
    )


def _h1(mine: pl.DataFrame, llm: pl.DataFrame, tasks: set[str], config: RunConfig, rng) -> H1:
    found = {task: _non_inferiority(mine, llm, task, config, rng) for task in ("D1", "D2") if task in tasks}
    verdicts_found = {v.verdict for v in found.values()}
    return H1(
        verdict="non-inferior"
        if verdicts_found == {"non-inferior"}
        else "inferior"
        if "inferior" in verdicts_found
        else "inconclusive",
        tasks=found,
    )


def holding(in_source: str, out_of_source: dict[str, str], holds: str) -> str:
    """The verdict that counts: `holds` only where it holds in source and on every out-of-source set
    (the JEV design's "Representatividade"); else what was found, said plainly."""
    if not out_of_source or in_source != holds:
        return in_source if not out_of_source else f"{in_source} in source"
    broken = [name for name, verdict in out_of_source.items() if verdict != holds]
    if not broken:
        return f"{holds} (in source and on {len(out_of_source)} out-of-source set(s))"
    return f"{holds} in source only (not on {', '.join(broken)})"


def verdicts(
    results: dict[str, CandidateResult], runs: dict[str, CandidateRun], config: RunConfig
) -> dict[str, Hypotheses]:
    """H1 non-inferiority vs the LLM baseline (D1 and D2 accuracy, margin), H2 abstention helps
    selective accuracy on every task with a confidence (bootstrap 95 % CI of the gain), each in source
    and on every out-of-source set, holding only where it holds out of source too; H3 p95 latency
    and cost within targets."""
    baseline = next((r for name, r in results.items() if runs[name].kind.role == "llm_baseline"), None)
    out = {}
    rng = np.random.default_rng(config.seed)
    for name, result in results.items():
        run = runs[name]
        if run.kind.role == "llm_baseline":
            continue
        h1 = _h1_everywhere(run, result, baseline, runs[baseline.candidate] if baseline else None, config, rng)
        h2 = _abstention(run.predictions, config, rng, result.abstention_d3_vs_confidence)
        outside_h2 = {
            source: _abstention(frame, config, rng).verdict for source, frame in run.outside_predictions.items()
        }
        h2 = h2.model_copy(
            update={
                "in_source": h2.verdict,
                "out_of_source": outside_h2,
                "verdict": holding(h2.verdict, outside_h2, "supported"),
            }
        )
        out[name] = Hypotheses(H1=h1, H2=h2, H3=_performance_verdict(result, baseline, config))
    return out


def _h1_everywhere(
    run: CandidateRun,
    result: CandidateResult,
    baseline: CandidateResult | None,
    llm: CandidateRun | None,
    config: RunConfig,
    rng: np.random.Generator,
) -> H1:
    """H1 in source and on every out-of-source set both answered, non-inferior only where it is on all of
    them; not evaluated without an LLM baseline in the run."""
    if baseline is None:
        return H1(
            verdict="not evaluated",
            reason="no LLM baseline in this run (add ollama:<model> or openai:<model> to the candidates)",
        )
    h1 = _h1(run.predictions, llm.predictions, set(result.tasks) & set(baseline.tasks), config, rng)
    outside_h1 = {
        source: _h1(
            frame,
            llm.outside_predictions[source],
            set(result.out_of_source.get(source, {})) & set(baseline.out_of_source.get(source, {})),
            config,
            rng,
        ).verdict
        for source, frame in run.outside_predictions.items()
        if source in llm.outside_predictions
    }
    return h1.model_copy(
        update={
            "in_source": h1.verdict,
            "out_of_source": outside_h1,
            "verdict": holding(h1.verdict, outside_h1, "non-inferior"),
        }
    )


def _performance_verdict(result: CandidateResult, baseline: CandidateResult | None, config: RunConfig) -> H3:
    """The JEV design H3: p95 per turn at batch 1 within the budget, and a cost per 1,000 decisions
    (batch 1, the orchestrator's path, on the candidate's shape) below the LLM baseline's — its own
    measured latency on its own shape — or below the stated price when no LLM ran. Not evaluated on
    fewer than three independent runs."""
    performance = result.performance
    p95 = result.latency_per_turn_ms_percentiles.get("p95", float("nan"))
    cost = result.cost_per_1000_usd
    llm_cost = baseline.cost_per_1000_usd if baseline else config.h3_cost_per_1000_usd
    verdict = (
        "not evaluated"
        if performance.independent_runs < 3
        else "met"
        if p95 <= config.h3_p95_ms and cost <= llm_cost
        else "not met"
    )
    return H3(
        verdict=verdict,
        p95_per_turn_ms=p95,
        target_p95_ms=config.h3_p95_ms,
        cost_per_1000_usd=cost,
        shape=performance.shape,
        compared_with_cost_per_1000_usd=llm_cost,
        compared_with=(
            f"measured {baseline.candidate} on {baseline.performance.shape}"
            if baseline
            else "stated price (no LLM in this run)"
        ),
        independent_runs=performance.independent_runs,
        reason=f"{performance.independent_runs} independent run(s); the JEV design asks for three"
        if verdict == "not evaluated"
        else _performance_reason(p95, cost, llm_cost, config),
    )


def _performance_reason(p95: float, cost: float, llm_cost: float, config: RunConfig) -> str:
    """Why H3 is met or not, in the two figures it compares (said for a met verdict too)."""
    latency = "within" if p95 <= config.h3_p95_ms else "over"
    price = "below" if cost <= llm_cost else "above"
    return (
        f"p95 per turn {p95:.1f} ms, {latency} the {config.h3_p95_ms:.0f} ms budget; cost per 1,000 decisions "
        f"US$ {cost:.3g}, {price} the compared US$ {llm_cost:.3g}"
    )
