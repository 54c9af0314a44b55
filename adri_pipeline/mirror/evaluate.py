"""Per decision point: sample, judge, compare rule and mirror, recommend.

All disagreements are sampled and a seeded share of agreements; agreement cases carry the weight
1/share so the accuracies estimate the whole log. Only cases both judges label identically count.
Recommendation: `promote` when, on the cases where the mirror is confident (p >= threshold), its
accuracy beats the rule's with a bootstrap 95 % interval above zero and enough cases; `retire` when
the interval is below zero; otherwise `keep shadow`. A safety point is only ever promoted to
hardening-only control.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from adri_pipeline.mirror.gate import DecisionPoint
from adri_pipeline.mirror.judges import Judge
from adri_pipeline.mirror.shadow_log import ingest
from adri_pipeline.routing import metrics
from adri_pipeline.warehouse import Warehouse

MIN_CONFIDENT_CASES = 30


def known_points(config_path: Path | None = None) -> dict[str, DecisionPoint]:
    """The replay points plus those of a gate configuration."""
    from adri_pipeline.mirror.gate import load_gate_config
    from adri_pipeline.mirror.replay import HTML_POINT, PAGE_TYPE_POINT

    points = {"page_type": PAGE_TYPE_POINT, "html_is_enough": HTML_POINT}
    return points | (load_gate_config(config_path).points if config_path else {})


def sample_for_judging(records: list[dict], agreement_share: float = 0.1, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    sampled = []
    for record in records:
        if record.get("mirror_decision") is None:
            continue
        if record["mirror_decision"] != record["rule_decision"]:
            sampled.append({**record, "weight": 1.0, "stratum": "disagreement"})
        elif rng.random() < agreement_share:
            sampled.append({**record, "weight": 1 / agreement_share, "stratum": "agreement"})
    return sampled


def judge(sampled: list[dict], point: DecisionPoint, first: Judge, second: Judge) -> list[dict]:
    return [{**r, "judge_a": first.label(point, r), "judge_b": second.label(point, r)} for r in sampled]


def _weighted_accuracy(correct: np.ndarray, weight: np.ndarray) -> float:
    return float((correct * weight).sum() / weight.sum()) if weight.sum() else float("nan")


def _gated(point: DecisionPoint, record: dict) -> str:
    mirror, rule = record["mirror_decision"], record["rule_decision"]
    if mirror not in point.options or (record["probability"] or 0) < point.threshold:
        return rule
    if point.safety and point.harden_order and point.restrictiveness(mirror) < point.restrictiveness(rule):
        return rule
    return mirror


def evaluate_point(name: str, point: DecisionPoint, records: list[dict], judged: list[dict],
                   hourly_price_usd: float = 0.50, seed: int = 3) -> dict:
    counted = [r for r in judged if r["judge_a"] is not None and r["judge_a"] == r["judge_b"]]
    labelled = [r for r in judged if r["judge_a"] is not None and r["judge_b"] is not None]
    label = np.array([r["judge_a"] for r in counted], dtype=object)
    weight = np.array([r["weight"] for r in counted], float)
    rule_ok = np.array([r["rule_decision"] for r in counted], dtype=object) == label
    mirror_ok = np.array([r["mirror_decision"] for r in counted], dtype=object) == label
    confident = np.array([(r["probability"] or 0) >= point.threshold for r in counted], bool)
    # what control would have returned: the mirror when confident (and, for safety, not looser)
    gated = np.array([_gated(point, r) for r in counted], dtype=object) == label
    with_mirror = [r for r in records if r.get("mirror_decision") is not None]
    latencies = [r["latency_ms"] for r in with_mirror]

    rng = np.random.default_rng(seed)
    gains = []
    index = np.nonzero(confident)[0]
    for _ in range(1000 if len(index) else 0):
        pick = rng.choice(index, len(index))
        gains.append(_weighted_accuracy(mirror_ok[pick], weight[pick]) - _weighted_accuracy(rule_ok[pick], weight[pick]))
    low, high = (np.percentile(gains, [2.5, 97.5]).tolist() if gains else [float("nan"), float("nan")])

    reasons = []
    if len(index) < MIN_CONFIDENT_CASES:
        recommendation = "keep shadow"
        reasons.append(f"only {len(index)} judged cases with p >= {point.threshold} (need {MIN_CONFIDENT_CASES})")
    elif low > 0:
        recommendation = "promote"
        reasons.append(f"mirror beats the rule when confident: gain 95 % CI [{low:.3f}, {high:.3f}]")
    elif high < 0:
        recommendation = "retire"
        reasons.append(f"mirror is worse than the rule when confident: gain 95 % CI [{low:.3f}, {high:.3f}]")
    else:
        recommendation = "keep shadow"
        reasons.append(f"no clear difference when confident: gain 95 % CI [{low:.3f}, {high:.3f}]")
    if recommendation == "promote" and point.safety:
        reasons.append("safety point: control is hardening-only (harden_order)")

    mean_latency_s = float(np.mean(latencies)) / 1000 if latencies else float("nan")
    return {
        "decision_point": name, "logged": len(records), "with_mirror": len(with_mirror),
        "sampled": len(judged), "disagreements_sampled": sum(r["stratum"] == "disagreement" for r in judged),
        "judge_agreement_rate": len(counted) / len(labelled) if labelled else float("nan"),
        "counted": len(counted),
        "rule_accuracy": _weighted_accuracy(rule_ok, weight),
        "mirror_accuracy": _weighted_accuracy(mirror_ok, weight),
        "rule_accuracy_when_mirror_confident": _weighted_accuracy(rule_ok[confident], weight[confident]),
        "mirror_accuracy_when_confident": _weighted_accuracy(mirror_ok[confident], weight[confident]),
        "control_accuracy": _weighted_accuracy(gated, weight),
        "coverage_at_threshold": float(np.mean([(r["probability"] or 0) >= point.threshold for r in with_mirror]))
        if with_mirror else float("nan"),
        "high_confidence_errors": int((confident & ~mirror_ok).sum()),
        "latency_ms": metrics.percentiles(latencies),
        "cost_per_decision_usd": hourly_price_usd * mean_latency_s / 3600,
        "dropped_or_failed": sum(r.get("outcome") in ("timeout", "mirror_error", "quota_exhausted") for r in records),
        "gain_ci95": [low, high], "recommendation": recommendation, "reasons": reasons,
    }


def recommended_configuration(points: dict[str, DecisionPoint], evaluations: dict[str, dict]) -> dict:
    """A control configuration for a person to approve: nothing switches until `approved: true`."""
    out = {"approved": False, "note": "generated by adri mirror evaluate; review `evidence`, then approve",
           "points": {}, "evidence": {}}
    for name, point in points.items():
        evaluation = evaluations.get(name, {})
        mode = {"promote": "control", "retire": "off"}.get(evaluation.get("recommendation"), point.mode)
        if mode == "control" and point.safety and not point.harden_order:
            mode = "shadow"  # never a control mode that could grant
        out["points"][name] = point.model_dump() | {"mode": mode}
        out["evidence"][name] = {k: evaluation.get(k) for k in (
            "recommendation", "reasons", "counted", "rule_accuracy_when_mirror_confident",
            "mirror_accuracy_when_confident", "control_accuracy", "rule_accuracy", "coverage_at_threshold", "gain_ci95")}
    return out


def evaluate_log(log_path: Path, points: dict[str, DecisionPoint], first: Judge, second: Judge,
                 warehouse: Warehouse, out_dir: Path, agreement_share: float = 0.1, seed: int = 3) -> dict:
    """Ingest (bad lines quarantined), sample, judge, evaluate each point, write the recommended
    configuration (`recommended_gate.yaml`, unapproved) and `mirror_evaluation.json`."""
    good, quarantined = ingest(log_path, warehouse)
    records = [r.model_dump(mode="json") for r in good]
    evaluations = {}
    for name, point in points.items():
        mine = [r for r in records if r["decision_point"] == name]
        if not mine:
            continue
        judged = judge(sample_for_judging(mine, agreement_share, seed), point, first, second)
        evaluations[name] = evaluate_point(name, point, mine, judged, seed=seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = recommended_configuration({n: points[n] for n in evaluations}, evaluations)
    (out_dir / "recommended_gate.yaml").write_text(
        yaml.safe_dump(json.loads(json.dumps(config, default=float)), allow_unicode=True, sort_keys=False), encoding="utf-8")
    report = {"log": str(log_path), "kept": len(good), "quarantined": quarantined, "judges": [first.name, second.name],
              "evaluations": evaluations}
    (out_dir / "mirror_evaluation.json").write_text(json.dumps(report, ensure_ascii=False, indent=1, default=float),
                                                    encoding="utf-8")
    rows = pl.DataFrame([{"decision_point": n, "log": str(log_path), "recommendation": e["recommendation"],
                          "evaluation": json.dumps(e, default=float)} for n, e in evaluations.items()])
    with warehouse.connect() as con:
        con.execute("CREATE TABLE IF NOT EXISTS mirror_evaluations (decision_point VARCHAR, log VARCHAR, "
                    "recommendation VARCHAR, evaluation JSON)")
        warehouse.replace_rows(con, "mirror_evaluations", rows, "log = ?", [str(log_path)])
    return report
