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
from adri_pipeline.routing.datasets import Dataset  # noqa: E402
from adri_pipeline.routing.departures import departures  # noqa: E402
from adri_pipeline.routing.protocol import RunConfig  # noqa: E402
from adri_pipeline.routing.results import BenchmarkReport, CandidateResult, Hypotheses  # noqa: E402
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
        table = [b for b in metrics.calibration_bins(frame["correct"].to_list(), frame["confidence"].to_list(), bins)
                 if b["count"]]
        axis.plot([b["confidence"] for b in table], [b["accuracy"] for b in table], "o-", label=name)
    _finish(figure, axis, path, "upper left", xlabel="confidence (mean per bin)", ylabel="accuracy",
            xlim=(0, 1), ylim=(0, 1), title=f"Reliability, {task}, {bins} equal-width bins")


def plot_coverage(runs: dict[str, CandidateRun], task: str, path: Path) -> None:
    figure, axis = plt.subplots(figsize=(6, 4))
    for name, run in runs.items():
        frame = run.predictions.filter(pl.col("task") == task)
        coverage, accuracy = metrics.selective_curve(frame["correct"].to_list(), frame["confidence"].to_list())
        axis.plot(coverage, accuracy, label=f"{name} (AURC {metrics.aurc(frame['correct'].to_list(), frame['confidence'].to_list()):.3f})")
    _finish(figure, axis, path, "lower left", xlabel="coverage", ylabel="selective accuracy",
            xlim=(0, 1), ylim=(0, 1.02), title=f"Coverage vs accuracy, {task}")


def _fmt(value) -> str:
    return "—" if value is None or (isinstance(value, float) and np.isnan(value)) else (
        f"{value:.3f}" if isinstance(value, float) else str(value))


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


def markdown(dataset: Dataset, config: RunConfig, results: dict[str, CandidateResult],
             hypotheses: dict[str, Hypotheses], name: str) -> str:
    counts = {s: len(dataset.in_split(s)) for s in ("dev", "calibration", "test")}
    lines = [f"# Routing benchmark — {name}", "",
             f"Wire: System One (POST /v1/systemone), serializer {config.serializer}; test split frozen, sha256 "
             f"`{dataset.test_hash[:16]}…`; examples dev/calibration/test = {counts['dev']}/{counts['calibration']}/{counts['test']}.",
             f"Run config: `{json.dumps(_shown(dataclasses.asdict(config)), ensure_ascii=False)}`", "",
             "Test data by task, origin and language (synthetic examples are reported apart from real ones: "
             "\"By origin\" below): "
             + "; ".join(f"{task} {origin} {language}: {n}" for (task, origin, language), n in sorted(_origins(dataset).items())),
             ""]
    if dataset.excluded:
        lines[-1:-1] = [f"Excluded: {len(dataset.excluded)} example(s) whose two annotators disagree with no "
                        f"adjudicated label (first: {dataset.excluded[0][0]}); an adjudicated label is the gold "
                        "when present."]
    header = ["candidate", "task", "n", "accuracy", "majority", "macro_f1", "set_f1", "brier", "ece", "mce",
              "hc_wrong@thr", f"hc_wrong@{config.high_confidence}", "aurc", "coverage@thr", "sel_acc@thr"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, result in results.items():
        for task, m in result.tasks.items():
            lines.append("| " + " | ".join(_fmt(v) for v in [
                name, task, m.n, m.accuracy, m.majority_baseline_accuracy, m.macro_f1, m.set_f1, m.brier, m.ece, m.mce,
                m.high_confidence_wrong_rate, m.high_confidence_wrong_rate_fixed, m.aurc, m.coverage_at_threshold,
                m.selective_accuracy_at_threshold]) + " |")
    lines += ["", "### By origin", "", "Every quality figure, synthetic and real test decisions apart (the JEV design: "
              "\"Dados sintéticos e reais são reportados em separado\").", "",
              "| candidate | origin | task | n | accuracy | majority | macro_f1 | set_f1 | brier | ece | hc_wrong@thr | "
              "aurc | sel_acc@thr |", "|---" * 13 + "|"]
    for name, result in results.items():
        for origin, tasks in sorted(result.by_origin.items()):
            for task, m in tasks.items():
                lines.append("| " + " | ".join(_fmt(v) for v in [
                    name, origin, task, m.n, m.accuracy, m.majority_baseline_accuracy, m.macro_f1, m.set_f1, m.brier,
                    m.ece, m.high_confidence_wrong_rate, m.aurc, m.selective_accuracy_at_threshold]) + " |")
    d4_costs = [(name, r.tasks["D4"].set_cost) for name, r in results.items()
                if "D4" in r.tasks and r.tasks["D4"].set_cost is not None]
    if d4_costs:
        lines += ["", "D4 total cost (the JEV design: \"custo total, que soma as latências\"; a set's questions go in "
                  "one request):"]
        lines += [f"- {name}: " + (c.reason if not c.sets_timed else
                                   f"{c.sets_timed} sets, {_fmt(c.latency_per_set_ms)} ms per set, "
                                   f"{_fmt(c.total_latency_s)} s in all; {_usd(c.cost_per_set_usd)} USD per set, "
                                   f"{_usd(c.total_cost_usd)} USD in all") for name, c in d4_costs]
    lines += ["", f"ECE/MCE: {config.ece_bins} equal-width confidence bins. hc_wrong@thr: share of all decisions "
              "wrong with confidence at or above the task's abstention threshold (an error nothing would ask "
              f"again about: the JEV design's measure); hc_wrong@{config.high_confidence}: the same at that fixed "
              "confidence. Abstention threshold per task chosen on the calibration "
              f"split as the lowest confidence reaching {config.target_selective_accuracy:.0%} selective accuracy.", "",
              "Performance: each figure is the median of independent runs, each a process of its own started "
              "from the saved candidate (nothing cached), timed after its warm-up on dev examples. Throughput at "
              "batch 1 is one decision after another; the production batch is the pilot's choice. Cost per 1,000 "
              f"decisions: the shape's hourly price (`{Path(config.prices).name}`) over the measured throughput.", "",
              "| candidate | runs | ms per decision p50/p95/p99 (batch 1) | p95 per turn ms | decisions/s | load s | "
              "warm-up s | peak RSS MB | artifact MB | shape (USD/h) | cost/1000 USD |", "|---" * 11 + "|"]
    for name, r in results.items():
        lat, perf = r.latency_ms, r.performance
        per_s = "; ".join(f"{_fmt(v)} @{k}" for k, v in perf.throughput_per_s.items())
        cost = "; ".join(f"{_usd(v)} @{k}" for k, v in perf.cost_per_1000_usd.items())
        lines.append(f"| {name} | {perf.independent_runs} | {_fmt(lat.get('p50'))} / {_fmt(lat.get('p95'))} / "
                     f"{_fmt(lat.get('p99'))} | {_fmt(r.latency_per_turn_ms_percentiles.get('p95'))} | {per_s} | "
                     f"{_fmt(perf.load_seconds)} | {_fmt(perf.warmup_seconds)} | {_fmt(perf.peak_rss_mb)} | "
                     f"{_fmt(perf.artifact_mb)} | {perf.shape} ({_fmt(perf.hourly_usd)}) | {cost} |")
    lines += ["", "## Hypotheses", ""]
    for name, verdict in hypotheses.items():
        for key in ("H1", "H2", "H3"):
            value = getattr(verdict, key)
            fields = value.model_dump(exclude={"verdict", "tasks"}, exclude_defaults=True)
            fields |= {task: figures.model_dump() for task, figures in getattr(value, "tasks", {}).items()}
            details = ", ".join(_detail(k, v) for k, v in fields.items())
            lines.append(f"- **{name} {key}: {value.verdict}** ({details})")
    lines += ["", "## Slices (accuracy)", ""]
    for name, result in results.items():
        for slice_name, values in result.slices.items():
            cells = ", ".join(f"{k}: {v['accuracy']:.2f} (n={v['n']})" for k, v in sorted(values.items()))
            lines.append(f"- {name} / {slice_name}: {cells}")
    return "\n".join(lines) + "\n"


def _detail(key: str, value) -> str:
    """One part of a verdict's line: nested verdicts (H2 per task) by their own verdict and figures."""
    if isinstance(value, list):
        return f"{key}={[_fmt(x) for x in value]}"
    if isinstance(value, dict) and "verdict" in value:
        parts = ", ".join(_detail(k, v) for k, v in value.items() if k != "verdict")
        return f"{key} {value['verdict']} [{parts}]"
    if isinstance(value, dict) and "better" in value:
        explicit, derived = value["explicit_d3"], value["derived_confidence"]
        return (f"{key}: better {value['better']} on {value['turns']} turns "
                f"(explicit {_fmt(explicit['accuracy_on_kept'])} at coverage {_fmt(explicit['coverage'])}, "
                f"derived {_fmt(derived['accuracy_on_kept'])} at coverage {_fmt(derived['coverage'])})")
    return f"{key}={_usd(value) if 'cost' in key else _fmt(value)}"


def write_report(out_dir: Path, dataset: Dataset, config: RunConfig, runs: dict[str, CandidateRun],
                 results: dict[str, CandidateResult], hypotheses: dict[str, Hypotheses]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_reliability(runs, "D1", config.ece_bins, out_dir / "reliability_D1.png")
    plot_coverage(runs, "D1", out_dir / "coverage_accuracy_D1.png")
    agreement = annotation_agreement(dataset)
    departed = departures(dataset, config, runs)
    BenchmarkReport(config=dataclasses.asdict(config), test_hash=dataset.test_hash, results=results,
                    hypotheses=hypotheses, annotator_agreement=agreement, departures=departed
                    ).write(out_dir / "metrics.json")
    path = out_dir / "report.md"
    text = markdown(dataset, config, results, hypotheses, name=out_dir.name)
    text += "\n## Departures from the protocol\n\n" + "".join(f"- {line}\n" for line in departed)
    if agreement:
        text += ("\n## Annotation\n\nExamples with two annotators: " + ", ".join(
            f"{k} {_fmt(v)}" for k, v in agreement.items()) + " (the JEV design §4: kappa / alpha in the report).\n")
    path.write_text(text, encoding="utf-8")
    return path


def store(warehouse: Warehouse, dataset: Dataset, config: RunConfig, runs: dict[str, CandidateRun],
          results: dict[str, CandidateResult], name: str) -> None:
    """The run's rows under `name` (its report folder's name): a built-in dataset's run, a team file's
    run and an evaluation on an external test file never replace each other's rows."""
    examples = pl.DataFrame([{
        "dataset": name, "example_id": e.id, "group_id": e.group_id, "task": e.task,
        "split": dataset.split_of[e.id], "gold": json.dumps(e.gold_label, ensure_ascii=False),
        "synthetic": e.metadata.synthetic, "example": e.model_dump_json()} for e in dataset.examples])
    predictions = pl.concat([r.predictions for r in runs.values()], how="diagonal").with_columns(
        pl.lit(name).alias("dataset"), pl.lit(json.dumps(dataclasses.asdict(config))).alias("run_config"))
    flat = [{"dataset": name, "candidate": candidate, "task": task, "metric": metric, "value": float(value)}
            for candidate, result in results.items() for task, m in result.tasks.items()
            for metric, value in m.model_dump().items() if isinstance(value, (int, float)) and not isinstance(value, bool)]
    store_routing_tables(warehouse, name, {"routing_examples": examples, "routing_predictions": predictions,
                                                     "routing_metrics": pl.DataFrame(flat)})
