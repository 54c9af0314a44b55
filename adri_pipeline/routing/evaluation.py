"""A candidate's test answers as the JEV design's figures: accuracy against the majority class,
calibration (ECE, MCE, AURC, Brier), selective accuracy at the threshold, slices, error causes,
the D3-vs-confidence abstention comparison, latency per decision and per turn, cost."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from adri_pipeline.jev import metrics
from adri_pipeline.jev.examples import NO_MATCH, CanonicalExample, length_bucket
from adri_pipeline.prices import PriceTable
from adri_pipeline.routing.composition import UNSEEN_TAG
from adri_pipeline.routing.datasets import Dataset
from adri_pipeline.routing.new_catalogues import TASK, catalogues
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.results import CandidateResult
from adri_pipeline.routing.run import CandidateRun


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
    rows = {
        (by_id[r["example_id"]].group_id, by_id[r["example_id"]].utterance, r["task"]): r
        for r in frame.iter_rows(named=True)
    }
    pairs = [
        (rows[(g, u, "D3")], r) for (g, u, task), r in rows.items() if task in ("D1", "D2") and (g, u, "D3") in rows
    ]
    if not pairs:
        return {}

    def kept(which):
        chosen = [route for d3, route in pairs if which(d3, route)]
        return {
            "coverage": len(chosen) / len(pairs),
            "accuracy_on_kept": float(np.mean([r["correct"] for r in chosen])) if chosen else float("nan"),
        }

    return {
        "turns": len(pairs),
        "explicit_d3": kept(lambda d3, route: d3["answer"] == "sim"),
        "derived_confidence": kept(lambda d3, route: route["confidence"] >= thresholds.get(route["task"], 1.01)),
        "no_abstention_accuracy": float(np.mean([route["correct"] for _, route in pairs])),
    }


def _same_meaning(first: str, second: str) -> bool:
    return " ".join(first.lower().split()) == " ".join(second.lower().split())


def taxonomy_admits(example: CanonicalExample, answer: str) -> bool:
    """The taxonomy, not the model, is at fault when it does not tell the gold from the answer: an
    annotator chose that answer (the categories overlap), or the two options are described alike."""
    if example.task == "D4":
        given = set(answer.split("|")) - {""}
        return any(isinstance(label, list) and set(label) == given for label in example.annotator_labels)
    if answer in example.annotator_labels:
        return True
    gold = example.options.get(str(example.gold_label))
    return gold is not None and answer in example.options and _same_meaning(gold, example.options[answer])


def error_cause(example: CanonicalExample, answer: str) -> str:
    """the JEV design tasks 72-73 ("taxonomia, contexto insuficiente, ambiguidade, linguagem,
    truncamento, instrução ou desempenho do modelo"), first matching cause: an answer outside the
    options (instruction), a taxonomy that does not tell the two apart (`taxonomy_admits`), an
    ambiguous case, a reply that depends on context, a state cut by the serializer, adversarial
    language, else the model."""
    from adri_pipeline.jev.serialize import MAX_STATE_CHARS, MAX_TURNS, serialize_state

    meta = example.metadata
    if (
        example.task != "D4"
        and answer not in example.options
        and not (example.question_type == "noul" and answer in ("sim", "nao"))
    ):
        return "instrucao"
    if taxonomy_admits(example, answer):
        return "taxonomia"
    if meta.ambiguity == "alta" or example.gold_label == "desambiguar":
        return "ambiguidade"
    if "curta_dependente_de_contexto" in meta.adversarial:
        return "contexto_insuficiente"
    if (
        len(example.state.recent_turns) > MAX_TURNS
        or len(serialize_state(example.state, example.utterance)) >= MAX_STATE_CHARS - 40
    ):
        return "truncamento"
    if {"abreviacao", "erro_ortografico", "regionalismo"} & set(meta.adversarial) or meta.language not in (
        "pt-BR",
        "pt",
    ):
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
            entry["examples"].append(
                {
                    "id": example.id,
                    "utterance": example.utterance,
                    "gold": row["gold"],
                    "answer": row["answer"],
                    "confidence": round(row["confidence"], 3),
                }
            )
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


RISK_COVERAGES = (0.2, 0.4, 0.6, 0.8, 1.0)


def prediction_sets(
    probabilities: list[dict[str, float]],
    gold: list[str],
    quantile: float,
    config: RunConfig,
    catalogue_of: list[str] | None = None,
) -> dict:
    """Each decision's conformal set (jev/metrics.conformal_set) and what a router would do with it:
    answer a set of one, ask which of 2..question_max_options, abstain on an empty or larger set. With
    each decision's catalogue (D2), the coverage's 95 % interval drawn over whole catalogues: the sets are
    stated for a new catalogue's turns, and how far one set of catalogues may fall from the stated
    coverage is a matter of how many catalogues it holds, not how many turns."""
    sets = [metrics.conformal_set(p, quantile) for p in probabilities]
    sizes = np.array([len(s) for s in sets])
    single = sizes == 1
    answered_right = [s[0] == g for s, g in zip(sets, gold) if len(s) == 1]
    share = (lambda mask: float(mask.mean())) if len(sets) else (lambda mask: float("nan"))
    covered = np.array([g in s for s, g in zip(sets, gold)])
    across = None
    if catalogue_of is not None:
        across = {
            "catalogues": len(set(catalogue_of)),
            "interval": metrics.clustered_share_interval(covered, catalogue_of, np.random.default_rng(config.seed)),
        }
    return {
        "stated_coverage": config.set_coverage,
        "quantile": quantile,
        "coverage": share(covered),
        "coverage_across_catalogues": across,
        "mean_size": share(sizes),
        "answered": share(single),
        "asked": share((sizes >= 2) & (sizes <= config.question_max_options)),
        "abstained": share((sizes == 0) | (sizes > config.question_max_options)),
        "answered_accuracy": float(np.mean(answered_right)) if answered_right else float("nan"),
    }


def task_figures(group: pl.DataFrame, config: RunConfig, set_quantile: float | None = None, catalogue_of=None) -> dict:
    """One task's quality figures over some of its test decisions (all, or one origin's); with the
    task's conformal quantile, its prediction sets (`catalogue_of`: D2's catalogues, for their interval)."""
    gold, answer = group["gold"].to_list(), group["answer"].to_list()
    correct, confidence = group["correct"].to_list(), group["confidence"].to_list()
    probabilities = [json.loads(p) for p in group["probabilities"].to_list()]
    ece, mce = metrics.ece_mce(correct, confidence, config.ece_bins)
    coverage, selective_accuracy = metrics.selective_at(correct, confidence, group["threshold"][0])
    entry = {
        "n": group.height,
        "accuracy": metrics.accuracy(gold, answer),
        # always answering the most frequent test label: what an accuracy must beat to mean anything
        "majority_baseline_accuracy": max(gold.count(g) for g in set(gold)) / len(gold),
        # the JEV design: "rota errada com confiança alta (erro que não seria desambiguado)": wrong at or
        # above the abstention threshold chosen on calibration, where nothing asks the user again;
        # and, labelled apart, at the fixed config.high_confidence
        "high_confidence_wrong_rate": metrics.high_confidence_wrong_rate(correct, confidence, group["threshold"][0]),
        "high_confidence_wrong_rate_fixed": metrics.high_confidence_wrong_rate(
            correct, confidence, config.high_confidence
        ),
        "ece": ece,
        "mce": mce,
        "aurc": metrics.aurc(correct, confidence),
        "coverage_at_threshold": coverage,
        "selective_accuracy_at_threshold": selective_accuracy,
        "risk_at_coverage": {f"{c:.0%}": metrics.risk_at_coverage(correct, confidence, c) for c in RISK_COVERAGES},
        "reliability": metrics.calibration_bins(correct, confidence, config.ece_bins),
    }
    if group["task"][0] == "D1" and NO_MATCH in gold and len(set(gold)) > 1:  # a source that annotates scope
        entry["scope"] = metrics.out_of_scope(gold, answer, confidence, group["threshold"][0], NO_MATCH)
    if set_quantile is not None and not group["task"][0].startswith("D4"):
        grouped = _catalogues(group, catalogue_of)
        entry["prediction_sets"] = prediction_sets(probabilities, gold, set_quantile, config, grouped)
    if group["task"][0].startswith("D4"):
        entry["set_f1"] = metrics.set_f1(
            [set(a.split("|")) - {""} for a in answer], [set(g.split("|")) - {""} for g in gold]
        )
    else:
        entry |= {
            "macro_f1": metrics.macro_f1(gold, answer),
            "per_class": metrics.per_class(gold, answer),
            "confusion": metrics.confusion(gold, answer),
            "brier": metrics.brier(probabilities, gold),
        }
    return entry


def _catalogues(group: pl.DataFrame, catalogue_of: dict[str, str] | None) -> list[str] | None:
    """Each D2 decision's catalogue, when they are known; None for any other task."""
    return [catalogue_of[i] for i in group["example_id"]] if catalogue_of and group["task"][0] == TASK else None


def scope_by_kind(frame: pl.DataFrame, by_id: dict[str, CanonicalExample]) -> dict[str, dict] | None:
    """D1's out-of-scope figures on each kind of out-of-scope request apart, beside the same in-scope
    ones: those the source itself annotates out of scope (CLINC150's "oos" utterances: their D5 gold is
    fora_do_escopo, Larson et al.'s sense) and those for intents no split fitted on (leave intents out:
    composition.UNSEEN_TAG); the rest of D1's out-of-scope requests only lack their intent among the
    options. None without either kind."""
    d1 = frame.filter(pl.col("task") == "D1")
    annotated = {e.group_id for e in by_id.values() if e.task == "D5" and e.gold_label == "fora_do_escopo"}
    examples = [by_id[i] for i in d1["example_id"].to_list()]
    kinds = {
        "annotated out of scope by the source": [e.group_id in annotated for e in examples],
        "intents never fitted on": [UNSEEN_TAG in e.metadata.adversarial for e in examples],
    }
    figures = {}
    for kind, chosen in kinds.items():
        if any(chosen):
            kept = d1.filter(pl.Series(chosen) | (pl.col("gold") != NO_MATCH))
            figures[kind] = metrics.out_of_scope(
                kept["gold"].to_list(),
                kept["answer"].to_list(),
                kept["confidence"].to_list(),
                kept["threshold"][0],
                NO_MATCH,
            )
    return figures or None


def set_cost(run: CandidateRun, frame: pl.DataFrame, hourly_usd: float) -> dict:
    """The JEV design, D4: "custo total, que soma as latências". A set's questions go in one request, so
    a set costs its measured latency (mean over the independent runs); the D4 test sets together
    cost the sum, in seconds and at the shape's hourly price."""
    seconds = [
        float(np.mean(run.measured.latency_by_example[i]))
        for i in frame["example_id"].to_list()
        if i in run.measured.latency_by_example
    ]
    if not seconds:
        return {"sets_timed": 0, "reason": "no performance run timed these sets"}
    return {
        "sets_timed": len(seconds),
        "latency_per_set_ms": 1000 * float(np.mean(seconds)),
        "total_latency_s": float(np.sum(seconds)),
        "cost_per_set_usd": float(np.mean(seconds)) * hourly_usd / 3600,
        "total_cost_usd": float(np.sum(seconds)) * hourly_usd / 3600,
    }


def origin_of(example: CanonicalExample) -> str:
    return "synthetic" if example.metadata.synthetic else "real"


def drift_alarms(run: CandidateRun) -> dict[str, float]:
    """Per test set ("in source" and each out-of-source set), the share of its decisions, replayed in
    order through the serving drift monitor (jev/drift.py), taken while it said drifted: in source
    that is the false-alarm rate. Empty for a candidate that does not embed its messages."""
    from adri_pipeline.jev.drift import replay

    if not run.drift_reference:
        return {}
    sets = {"in source": run.predictions, **run.outside_predictions}
    return {
        name: replay(run.drift_reference, frame["familiarity"].drop_nulls().to_list())
        for name, frame in sets.items()
        if "familiarity" in frame.columns
    }


def out_of_source_figures(
    run: CandidateRun, config: RunConfig, catalogue_of: dict[str, dict[str, str]] | None = None
) -> dict[str, dict[str, dict]]:
    """Per out-of-source set and task, the same quality figures as on the test split (`catalogue_of`:
    per set, each D2 decision's catalogue)."""
    out: dict[str, dict[str, dict]] = {}
    for name, predictions in run.outside_predictions.items():
        for (task,), group in multi_intent_d4_apart(predictions).group_by("task", maintain_order=True):
            out.setdefault(name, {})[task] = task_figures(
                group, config, run.set_quantiles.get(task), (catalogue_of or {}).get(name)
            )
    return out


def catalogues_of_sets(dataset: Dataset, outside=()) -> dict[str, dict[str, str]]:
    """Per test set ("in source" and each out-of-source set, out_of_source.OutsideSet), each D2 decision's
    catalogue (new_catalogues.catalogues), found within that set alone."""
    sets = {"in source": dataset.in_split("test"), **{s.name: s.examples for s in outside}}
    return {name: catalogues([e for e in examples if e.task == TASK]) for name, examples in sets.items()}


def evaluate(run: CandidateRun, dataset: Dataset, config: RunConfig, outside=()) -> CandidateResult:
    """The candidate's figures on the test split and on each out-of-source set (`outside`:
    out_of_source.OutsideSet, whose examples give D2's catalogues)."""
    by_id = {e.id: e for e in dataset.examples}
    catalogue_of = catalogues_of_sets(dataset, outside)
    frame = multi_intent_d4_apart(run.predictions)
    prices = PriceTable.read(Path(config.prices))
    result = {
        "candidate": run.name,
        "tasks": {},
        "by_origin": {},
        "slices": {},
        "temperature": run.temperature,
        "abstention_threshold": run.threshold,
        "discarded_answers": run.discarded,
        "discarded_reasons": run.discarded_reasons,
        "kind": run.kind.describe() if run.kind else {},
        "token_limit": run.token_limit,
    }
    for (task,), group in frame.group_by("task", maintain_order=True):
        result["tasks"][task] = task_figures(group, config, run.set_quantiles.get(task), catalogue_of["in source"])
        if task == "D4":
            result["tasks"][task]["set_cost"] = set_cost(run, group, prices.hourly(run.name))
    if "D1" in result["tasks"]:
        result["tasks"]["D1"]["scope_by_kind"] = scope_by_kind(frame, by_id)
    result["by_origin"] = _by_origin(frame, by_id, config)
    result["slices"] = _slices(frame, by_id, dataset)
    result["error_causes"] = error_causes(frame, by_id)
    result["abstention_d3_vs_confidence"] = abstention_comparison(frame, by_id, run.threshold)
    latencies = run.measured.latencies_s
    result["latency_ms"] = {k: v * 1000 for k, v in metrics.percentiles(latencies).items()}
    result["latency_per_turn_ms_percentiles"] = {
        k: v * 1000 for k, v in metrics.percentiles(_turn_latencies(run, by_id)).items()
    }
    result["performance"] = performance(run, prices)
    result["cost_per_1000_usd"] = result["performance"]["cost_per_1000_usd"]["batch 1"]
    result["fit_seconds"] = run.fit_seconds
    counted = [e.metadata.n_tokens[run.name] for e in dataset.in_split("test") if run.name in e.metadata.n_tokens]
    if counted:
        result["input_tokens"] = {
            "median": float(np.median(counted)),
            "p95": float(np.percentile(counted, 95)),
            "max": float(max(counted)),
        }
    result["out_of_source"] = out_of_source_figures(run, config, catalogue_of)
    result["drift_alarm_share"] = drift_alarms(run)
    result["threshold_bounds"] = run.threshold_bounds
    # what answered the test, as frozen after calibration (routing/freeze.py)
    result["freeze"] = json.loads(run.freeze_record.read_text(encoding="utf-8")) if run.freeze_record else None
    return CandidateResult.model_validate(result)


def _by_origin(frame: pl.DataFrame, by_id: dict, config: RunConfig) -> dict:
    """Every quality figure per origin (synthetic, real) and task: the JEV design, "Dados sintéticos e
    reais são reportados em separado"."""
    by_origin: dict = {}
    origins = frame.with_columns(
        pl.Series("origin", [origin_of(by_id[i]) for i in frame["example_id"].to_list()], pl.String)
    )
    for (origin, task), group in origins.group_by("origin", "task", maintain_order=True):
        by_origin.setdefault(origin, {})[task] = task_figures(group, config)
    return by_origin


def _slices(frame: pl.DataFrame, by_id: dict, dataset: Dataset) -> dict:
    """Accuracy per value of each slice (SLICES, and each key a team added inside metadata); an example
    with several tags counts in each of them."""
    team_keys = sorted({k for e in dataset.examples for k in (e.metadata.model_extra or {})})
    slices = SLICES | {
        f"metadata.{k}": (lambda e, k=k: str((e.metadata.model_extra or {}).get(k, "—"))) for k in team_keys
    }  # keys a team added inside metadata
    out = {}
    for slice_name, key in slices.items():
        values = [key(by_id[i]) for i in frame["example_id"].to_list()]
        sliced = frame.with_columns(
            pl.Series("slice", [v if isinstance(v, list) else [v] for v in values], pl.List(pl.String))
        ).explode("slice")  # each of an example's tags
        out[slice_name] = {
            value: {"n": g.height, "accuracy": float(g["correct"].mean())}
            for (value,), g in sliced.group_by("slice", maintain_order=True)
        }
    return out


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
    return {
        "independent_runs": len(measured.runs),
        "runs": [
            {k: r.get(k) for k in ("pid", "load_seconds", "warmup_seconds", "peak_rss_mb", "cached_at_start")}
            for r in measured.runs
        ],
        "load_seconds": measured.median("load_seconds"),
        "warmup_seconds": measured.median("warmup_seconds"),
        "peak_rss_mb": measured.median("peak_rss_mb"),
        "artifact_mb": measured.artifact_bytes / 2**20,
        "production_batch": batch,
        "batch_chosen_by": run.batch_chosen_by,
        "throughput_per_s": per_s,
        "shape": prices.shape_of(run.name),
        "hourly_usd": hourly,
        "price_table": str(prices.path),
        # the JEV design: "a partir do preço do shape OCI e da vazão medida" (decisions in one second)
        "cost_per_1000_usd": {k: metrics.cost_per_thousand(1.0, v, hourly) for k, v in per_s.items()},
    }
