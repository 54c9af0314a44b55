"""Per decision point: sample, judge, compare rule and mirror, recommend.

All disagreements are sampled and a seeded share of agreements; agreement cases carry the weight
1/share so the accuracies estimate the whole log. Only cases both judges label identically count.
Confident failures are diagnosed as the mirror design does: "Se os juízes acertam com o mesmo texto e o espelho
não, falha o estado que lhe damos; se o espelho duvida, costuma falhar a pergunta".
Recommendation: `promote` when, on the cases where the mirror is confident (p >= threshold), its
accuracy beats the rule's with a bootstrap 95 % interval above zero, enough cases, and enough shadow
evidence ("Sombra com tráfego real durante dias": `min_days` days with traffic and `min_agreed` cases
both judges labelled alike); `retire` when the interval is below zero; otherwise `keep shadow`. A
safety point is only ever promoted to hardening-only control. `recommended_mode` is what an approval
may bind the point to (approval.py).
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import yaml

from adri_pipeline import strict_json
from adri_pipeline.jev import metrics
from adri_pipeline.mirror.gate_config import DecisionPoint
from adri_pipeline.mirror.judges import Judge
from adri_pipeline.mirror.results import PointEvaluation
from adri_pipeline.warehouse import Warehouse

MIN_CONFIDENT_CASES = 30
# the mirror design's path starts with "Sombra com tráfego real durante dias" and its worked example
# rests on about 70 judged pages: at least two days of traffic and 50 cases the judges agree on
MIN_SHADOW_DAYS = 2
MIN_AGREED_CASES = 50
REFERENCE_SIZE = 1000  # confidences a point's evaluation keeps for its gate's drift monitor


def known_points(config_path: Path | None = None) -> dict[str, DecisionPoint]:
    """The replay points plus those of a gate configuration."""
    from adri_pipeline.mirror.gate_config import load_gate_config
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
    if point.question_type != "score" and (point.overrides or point.harden_order) and not point.allows(rule, mirror):
        return rule
    return mirror


OVERRIDE_MIN_CASES = 5  # a direction is "clear" with at least this many agreed cases the mirror got right
OVERRIDE_MIN_SHARE = 0.75  # ... and right on at least this share of the cases it moved that way


def override_directions(point: DecisionPoint, counted: list[dict]) -> list[dict]:
    """Per move (rule's answer -> the confident mirror's other answer) among the cases both judges
    labelled alike: how often the mirror, and the rule, were right. A move is `clear` when the mirror
    was right on at least OVERRIDE_MIN_CASES of them and OVERRIDE_MIN_SHARE of them (and, on a safety
    point, it hardens): "Controlo numa única direção, se o espelho ganha com clareza" (the mirror design)."""
    moves: dict[tuple, dict] = {}
    for record in counted:
        rule, mirror = record["rule_decision"], record["mirror_decision"]
        if (
            mirror is None
            or mirror == rule
            or mirror not in point.options
            or rule not in point.options
            or not (record["probability"] or 0) >= point.threshold
        ):
            continue
        move = moves.setdefault(
            (rule, mirror), {"rule": rule, "mirror": mirror, "cases": 0, "mirror_right": 0, "rule_right": 0}
        )
        move["cases"] += 1
        move["mirror_right"] += mirror == record["judge_a"]
        move["rule_right"] += rule == record["judge_a"]
    for move in moves.values():
        hardens = not point.safety or point.restrictiveness(move["mirror"]) > point.restrictiveness(move["rule"])
        move["clear"] = bool(
            hardens
            and move["mirror_right"] >= OVERRIDE_MIN_CASES
            and move["mirror_right"] >= OVERRIDE_MIN_SHARE * move["cases"]
        )
    return sorted(moves.values(), key=lambda m: (-m["cases"], m["rule"], m["mirror"]))


def traffic_days(records: list[dict]) -> list[str]:
    """The UTC dates on which the point saw traffic, in order."""
    return sorted(
        {
            datetime.fromisoformat(str(r["timestamp"])).astimezone(timezone.utc).date().isoformat()
            for r in records
            if r.get("timestamp")
        }
    )


def recommended_mode(point: DecisionPoint, recommendation: str) -> str:
    """The most authority the evaluation supports: control when promoted (hardening-only for safety
    points, warn for a point that may never command), off when retired, shadow otherwise."""
    if recommendation == "retire":
        return "off"
    if recommendation != "promote":
        return "shadow"
    if point.never_control:
        return "warn"
    if point.safety and not point.harden_order:
        return "shadow"  # never a control mode that could grant
    return "control"


def _recommendation(
    point: DecisionPoint,
    confident_cases: int,
    gain_ci: metrics.Interval,
    days: int,
    counted: list[dict],
    min_days: int,
    min_agreed: int,
) -> tuple[str, list[str], list, list]:
    """(recommendation, reasons, every direction's figures, the directions control may move in): promote
    only on a gain interval above zero when confident, enough shadow evidence, and a direction in
    which the mirror wins clearly (the mirror design: "Controlo numa única direção")."""
    shown = metrics.interval_text(gain_ci)
    reasons = []
    if confident_cases < MIN_CONFIDENT_CASES:
        recommendation = "keep shadow"
        reasons.append(f"only {confident_cases} judged cases with p >= {point.threshold} (need {MIN_CONFIDENT_CASES})")
    elif isinstance(gain_ci, metrics.NotEnoughData):
        recommendation = "keep shadow"
        reasons.append(f"no gain interval when confident: {shown}")
    elif gain_ci[0] > 0:
        recommendation = "promote"
        reasons.append(f"mirror beats the rule when confident: gain 95 % CI {shown}")
    elif gain_ci[1] < 0:
        recommendation = "retire"
        reasons.append(f"mirror is worse than the rule when confident: gain 95 % CI {shown}")
    else:
        recommendation = "keep shadow"
        reasons.append(f"no clear difference when confident: gain 95 % CI {shown}")
    short = [f"{days} day(s) of shadow traffic (need {min_days})"] * (days < min_days) + [
        f"{len(counted)} cases both judges labelled alike (need {min_agreed})"
    ] * (len(counted) < min_agreed)
    if recommendation == "promote" and short:
        recommendation = "keep shadow"
        reasons.append("not enough shadow evidence yet: " + "; ".join(short))
    moves = override_directions(point, counted) if point.question_type != "score" else []
    overrides = [[m["rule"], m["mirror"]] for m in moves if m["clear"]]
    if recommendation == "promote" and point.question_type != "score" and not overrides:
        recommendation = "keep shadow"
        reasons.append(
            f"the mirror wins overall but in no single direction clearly (a move needs "
            f"{OVERRIDE_MIN_CASES} agreed cases right and {OVERRIDE_MIN_SHARE:.0%} of its cases)"
        )
    if recommendation == "promote" and overrides:
        reasons.append("control in one direction only: " + ", ".join(f"{a} -> {b}" for a, b in overrides))
    if recommendation == "promote" and point.safety:
        reasons.append("safety point: control is hardening-only (harden_order)")
    return recommendation, reasons, moves, overrides


def evaluate_point(
    name: str,
    point: DecisionPoint,
    records: list[dict],
    judged: list[dict],
    hourly_price_usd: float,
    seed: int = 3,
    min_days: int = MIN_SHADOW_DAYS,
    min_agreed: int = MIN_AGREED_CASES,
) -> PointEvaluation:
    counted = [r for r in judged if r["judge_a"] is not None and r["judge_a"] == r["judge_b"]]
    label = np.array([r["judge_a"] for r in counted], dtype=object)
    weight = np.array([r["weight"] for r in counted], float)
    rule_ok = np.array([r["rule_decision"] for r in counted], dtype=object) == label
    mirror_ok = np.array([r["mirror_decision"] for r in counted], dtype=object) == label
    confident = np.array([(r["probability"] or 0) >= point.threshold for r in counted], bool)
    gain_ci = _gain_interval(rule_ok, mirror_ok, weight, confident, seed)

    days = traffic_days(records)
    recommendation, reasons, moves, overrides = _recommendation(
        point, int(confident.sum()), gain_ci, len(days), counted, min_days, min_agreed
    )
    # what control would have returned: the mirror when confident (and, for safety, not looser), moving
    # only in the recommended directions when there are some
    gating = point.model_copy(update={"overrides": [tuple(o) for o in overrides]}) if overrides else point
    gated = np.array([_gated(gating, r) for r in counted], dtype=object) == label
    with_mirror = [r for r in records if r.get("mirror_decision") is not None]
    return PointEvaluation.model_validate(
        {
            "decision_point": name,
            **_traffic_figures(point, records, with_mirror, hourly_price_usd),
            **_judging_figures(judged, counted),
            **_accuracies(rule_ok, mirror_ok, gated, confident, weight),
            "failure_diagnosis": diagnose_failures(point, counted),
            "gain_ci95": gain_ci if isinstance(gain_ci, metrics.NotEnoughData) else list(gain_ci),
            "threshold": point.threshold,
            **_shadow_evidence(days, min_days, min_agreed),
            "recommendation": recommendation,
            "recommended_mode": recommended_mode(point, recommendation),
            "overrides": moves,
            "recommended_overrides": overrides if recommendation == "promote" else [],
            "reasons": reasons,
            "confidence_reference": confidence_reference(with_mirror),
        }
    )


def _judging_figures(judged: list[dict], counted: list[dict]) -> dict:
    """How much was judged and how often the two judges agreed: only the cases they labelled alike count."""
    labelled = [r for r in judged if r["judge_a"] is not None and r["judge_b"] is not None]
    return {
        "sampled": len(judged),
        "disagreements_sampled": sum(r["stratum"] == "disagreement" for r in judged),
        "judge_agreement_rate": len(counted) / len(labelled) if labelled else float("nan"),
        "counted": len(counted),
    }


def _shadow_evidence(days: list[str], min_days: int, min_agreed: int) -> dict:
    """The days of shadow traffic behind the evaluation, beside the least a promotion needs."""
    return {
        "shadow_days": len(days),
        "first_day": days[0] if days else None,
        "last_day": days[-1] if days else None,
        "min_shadow_days": min_days,
        "min_agreed_cases": min_agreed,
    }


def _gain_interval(rule_ok: np.ndarray, mirror_ok: np.ndarray, weight: np.ndarray, confident: np.ndarray, seed: int):
    """The bootstrap interval of the mirror's weighted accuracy over the rule's, on the cases where the
    mirror was confident: the only cases control would hand to it."""
    index = np.nonzero(confident)[0]

    def gain(positions):
        pick = index[positions]
        return _weighted_accuracy(mirror_ok[pick], weight[pick]) - _weighted_accuracy(rule_ok[pick], weight[pick])

    return metrics.bootstrap_interval(gain, len(index), np.random.default_rng(seed))


def _accuracies(
    rule_ok: np.ndarray, mirror_ok: np.ndarray, gated: np.ndarray, confident: np.ndarray, weight: np.ndarray
) -> dict:
    """The rule's, the mirror's and control's weighted accuracy on the cases both judges agreed on,
    overall and where the mirror was confident, and the confident mistakes a threshold cannot catch."""
    return {
        "rule_accuracy": _weighted_accuracy(rule_ok, weight),
        "mirror_accuracy": _weighted_accuracy(mirror_ok, weight),
        "rule_accuracy_when_mirror_confident": _weighted_accuracy(rule_ok[confident], weight[confident]),
        "mirror_accuracy_when_confident": _weighted_accuracy(mirror_ok[confident], weight[confident]),
        "control_accuracy": _weighted_accuracy(gated, weight),
        "high_confidence_errors": int((confident & ~mirror_ok).sum()),
    }


def _traffic_figures(
    point: DecisionPoint, records: list[dict], with_mirror: list[dict], hourly_price_usd: float
) -> dict:
    """What the logged traffic says without any judge: how much the mirror answered and how confidently,
    how fast, at what cost per decision, and how often it failed or was dropped."""
    latencies = [r["latency_ms"] for r in with_mirror]
    mean_latency_s = float(np.mean(latencies)) / 1000 if latencies else float("nan")
    return {
        "logged": len(records),
        "with_mirror": len(with_mirror),
        "coverage_at_threshold": float(np.mean([(r["probability"] or 0) >= point.threshold for r in with_mirror]))
        if with_mirror
        else float("nan"),
        "latency_ms": metrics.percentiles(latencies),
        "cost_per_decision_usd": hourly_price_usd * mean_latency_s / 3600,
        "hourly_price_usd": hourly_price_usd,
        "dropped_or_failed": sum(
            r.get("outcome")
            in ("timeout", "mirror_error", "mirror_busy", "quota_exhausted", "no_answer", "dropped_queue_full")
            for r in records
        ),
        "dropped_queue_full": sum(r.get("outcome") == "dropped_queue_full" for r in records),
    }


def confidence_reference(records: list[dict]) -> list[float]:
    """The mirror's probabilities for its answers on the traffic evaluated, sorted: a running gate
    compares the live ones with them (jev/drift.py, CONFIDENCE); past REFERENCE_SIZE, that many
    evenly spaced quantiles, which the two-sample test reads alike."""
    values = np.array([r["probability"] for r in records if isinstance(r.get("probability"), (int, float))], float)
    values = np.sort(values[np.isfinite(values)])
    if len(values) > REFERENCE_SIZE:
        values = np.quantile(values, np.linspace(0, 1, REFERENCE_SIZE))
    return [round(float(v), 4) for v in values]


def diagnose_failures(point: DecisionPoint, counted: list[dict], examples: int = 5) -> dict:
    """Among cases both judges labelled alike and the mirror got wrong: confident -> the state it
    was given lacks information; unsure -> the question is unclear."""
    out = {"state_lacks_information": [], "question_unclear": []}
    for record in counted:
        if record["mirror_decision"] is None or record["mirror_decision"] == record["judge_a"]:
            continue
        cause = "state_lacks_information" if (record["probability"] or 0) >= point.threshold else "question_unclear"
        out[cause].append(
            {
                k: record.get(k)
                for k in ("state_hash", "state", "rule_decision", "mirror_decision", "probability", "judge_a")
            }
        )
    return {cause: {"count": len(items), "examples": items[:examples]} for cause, items in out.items()}


def recommended_configuration(points: dict[str, DecisionPoint], evaluations: dict[str, PointEvaluation]) -> dict:
    """The configuration the evaluation supports, for a person to review: every point stays in its
    current non-acting mode (off or shadow) until `adri mirror approve` binds it to the evaluation;
    `evidence` shows the mode each may be approved for and why."""
    out = {
        "note": "generated by adri mirror evaluate; review `evidence`, then run adri mirror approve POINT "
        "--evaluation mirror_evaluation.json --config THIS_FILE",
        "points": {},
        "evidence": {},
    }
    for name, point in points.items():
        evaluation = evaluations.get(name)
        mode = point.mode if point.mode in ("off", "shadow") else "shadow"
        if evaluation is not None and evaluation.recommendation == "retire":
            mode = "off"
        out["points"][name] = point.model_dump(exclude={"approval"}) | {"mode": mode}
        out["evidence"][name] = {
            k: getattr(evaluation, k, None)
            for k in (
                "recommendation",
                "recommended_mode",
                "recommended_overrides",
                "reasons",
                "counted",
                "shadow_days",
                "first_day",
                "last_day",
                "rule_accuracy_when_mirror_confident",
                "mirror_accuracy_when_confident",
                "control_accuracy",
                "rule_accuracy",
                "coverage_at_threshold",
                "gain_ci95",
            )
        }
    return out


def evaluation_folder(warehouse: Warehouse, log_path: Path) -> Path:
    """Where one log's outputs go, for the CLI and Dagster alike: <warehouse folder>/mirror/<log stem>/."""
    return warehouse.path.parent / "mirror" / Path(log_path).stem


def write_recommended_configuration(
    out_dir: Path, points: dict[str, DecisionPoint], evaluations: dict[str, PointEvaluation]
) -> Path:
    """`recommended_gate.yaml`: nothing in it acts until a person approves a point with `adri mirror approve`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "recommended_gate.yaml"
    config = recommended_configuration({n: points[n] for n in evaluations if n in points}, evaluations)
    # the evidence is for a person deciding: four significant digits (mirror_evaluation.json keeps all)
    shown = json.loads(strict_json.dumps(config), parse_float=lambda text: float(f"{float(text):.4g}"))
    path.write_text(yaml.safe_dump(shown, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path
