"""The mirror evaluation users run, step by step, called alike by `adri mirror evaluate` (all steps
at once) and the Dagster assets (one step each): read the shadow log, sample per decision point,
two judges label the sample, evaluate each point, write the recommended (unapproved) configuration.
docs/mirror.md says what the mirror design decides."""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import yaml

from adri_pipeline import strict_json
from adri_pipeline.config import Settings
from adri_pipeline.mirror.approval import EVALUATION_FILE, ApprovalError, file_sha256, read_evaluation
from adri_pipeline.mirror.evaluate import (
    evaluate_point,
    evaluation_folder,
    judge,
    known_points,
    recommended_mode,
    sample_for_judging,
    write_recommended_configuration,
)
from adri_pipeline.mirror.gate_config import DecisionPoint, GateConfig, load_gate_config, parse_gate_config
from adri_pipeline.mirror.gate_plumbing import TASK_RECORD
from adri_pipeline.mirror.judges import make_judges, promotion_blocker
from adri_pipeline.mirror.results import ApprovalEvidence, MirrorReport, PointEvaluation
from adri_pipeline.mirror.shadow_log import ingest, read_log
from adri_pipeline.privacy import Redactor
from adri_pipeline.warehouse import Warehouse, store_mirror_evaluations

AGREEMENT_SHARE = 0.1
SAMPLE_SEED = 3
# the mirror design: "dois modelos grandes de famílias distintas etiquetam cada caso por sua conta";
# the log's own labels are one source, however many times they are read
ONE_SOURCE = "needs a second judge"


@dataclass
class ShadowRecords:
    records: list[dict]  # decision records (task records left out), as JSON-ready dicts
    kept: int
    quarantined: list[dict]


def decision_records(settings: Settings, warehouse: Warehouse | None = None) -> ShadowRecords:
    """The log's valid decision records; with a warehouse, ingested there (bad lines quarantined)."""
    options = {name: list(point.options) for name, point in points(settings).items() if point.options}
    if warehouse is not None:
        good, quarantined = ingest(settings.mirror_log, warehouse, options, redactor(settings))
    else:
        good, quarantined = read_log(settings.mirror_log, redactor(settings), options)
    records = [r.model_dump(mode="json", exclude={"exposed_fields"}) for r in good if r.decision_point != TASK_RECORD]
    return ShadowRecords(records, len(good), quarantined)


def redactor(settings: Settings) -> Redactor:
    """The gate configuration's redactor (its names, detector, patterns): whatever reads the log
    redacts with the one the gate wrote it with, whoever wrote it."""
    return (
        load_gate_config(settings.mirror_config).redactor()
        if settings.mirror_config.exists()
        else GateConfig(points={}).redactor()
    )


def points(settings: Settings) -> dict[str, DecisionPoint]:
    return known_points(settings.mirror_config)


def sample(settings: Settings, records: list[dict]) -> list[dict]:
    """Per decision point: every disagreement and a seeded share of agreements."""
    return [
        s
        for name in points(settings)
        for s in sample_for_judging([r for r in records if r["decision_point"] == name], AGREEMENT_SHARE, SAMPLE_SEED)
    ]


def judgements(settings: Settings, sampled: list[dict]) -> tuple[list[dict], list[str]]:
    """Two judges (ADRI_MIRROR_JUDGES) label each sampled case on their own; returns (cases, each judge's
    name, source, family or annotator, and how many cases it labelled)."""
    first, second = make_judges(settings.mirror_judges, settings)
    judged = [
        j
        for name, point in points(settings).items()
        for j in judge([r for r in sampled if r["decision_point"] == name], point, first, second)
    ]
    described = [
        {**j.describe(), "cases_labelled": sum(r[key] is not None for r in judged)}
        for j, key in ((first, "judge_a"), (second, "judge_b"))
    ]
    return judged, described


def evaluations(settings: Settings, records: list[dict], judged: list[dict]) -> dict[str, PointEvaluation]:
    """Per point; with judges that cannot be shown independent (promotion_blocker) a point is never
    recommended for promotion."""
    from adri_pipeline.prices import PriceTable

    blocker = promotion_blocker(settings.mirror_judges)
    prices = PriceTable.read(settings.routing_prices)  # one price table for candidates and mirrors
    out = {}
    for name, point in points(settings).items():
        mine = [r for r in records if r["decision_point"] == name]
        if mine:
            shape = prices.shape_of(f"mirror:{name}")  # ran_on."mirror:<point>", else the default shape
            evaluation = evaluate_point(
                name,
                point,
                mine,
                [j for j in judged if j["decision_point"] == name],
                hourly_price_usd=prices.shapes[shape].hourly_usd,
                seed=SAMPLE_SEED,
                min_days=settings.mirror_min_shadow_days,
                min_agreed=settings.mirror_min_agreed_cases,
            )
            evaluation.machine_shape = shape
            if blocker and evaluation.recommendation == "promote":
                evaluation = evaluation.model_copy(
                    update={
                        "recommendation": ONE_SOURCE,
                        "recommended_mode": recommended_mode(point, ONE_SOURCE),
                        "recommended_overrides": [],
                        "reasons": [*evaluation.reasons, f"{blocker} (ADRI_MIRROR_JUDGES)"],
                    }
                )
            out[name] = evaluation
    return out


def store_evaluations(settings: Settings, warehouse: Warehouse, evaluated: dict[str, PointEvaluation]) -> pl.DataFrame:
    # the log's resolved path: the same log given as a relative and an absolute path is one log
    log = str(Path(settings.mirror_log).resolve())
    rows = pl.DataFrame(
        [
            {"decision_point": n, "log": log, "recommendation": e.recommendation, "evaluation": strict_json.dumps(e)}
            for n, e in evaluated.items()
        ]
    )
    store_mirror_evaluations(warehouse, log, rows)
    return rows


def recommend(
    settings: Settings, warehouse: Warehouse, evaluated: dict[str, PointEvaluation], **context
) -> MirrorReport:
    """Beside the log's other outputs: `recommended_gate.yaml` (nothing in it acts until a person runs
    `adri mirror approve`) and `mirror_evaluation.json`, the dated report an approval is bound to.
    Returns the report; `context` (judges, lines kept and quarantined) goes into it."""
    path = write_recommended_configuration(
        evaluation_folder(warehouse, settings.mirror_log), points(settings), evaluated
    )
    report = MirrorReport(
        evaluated_at=datetime.now(timezone.utc).isoformat(),
        log=str(settings.mirror_log),
        log_sha256=file_sha256(Path(settings.mirror_log)),
        **context,
        evaluations=evaluated,
        recommended_configuration=str(path),
    )
    report.write(path.parent / EVALUATION_FILE)
    return report


def evaluate_log(settings: Settings, warehouse: Warehouse) -> MirrorReport:
    """Every step for ADRI_MIRROR_LOG (or --log), as the Dagster assets run them one by one."""
    shadow = decision_records(settings, warehouse)
    judged, judges = judgements(settings, sample(settings, shadow.records))
    evaluated = evaluations(settings, shadow.records, judged)
    store_evaluations(settings, warehouse, evaluated)
    return recommend(settings, warehouse, evaluated, judges=judges, kept=shadow.kept, quarantined=shadow.quarantined)


def _round_trip_yaml():
    from ruamel.yaml import YAML

    round_trip = YAML()  # round-trip mode: comments and key order are kept
    round_trip.preserve_quotes = True
    round_trip.width = 4096  # never reflow a long line
    return round_trip


def approve(config_path: Path, name: str, evaluation_path: Path, mode: str | None = None) -> dict:
    """Write point `name`'s approval (and mode: the recommended one unless a weaker `mode` is asked)
    into the gate configuration at `config_path`. The new file is validated before it replaces the
    old one, so a refused approval leaves the configuration as it was. Returns the point's entry."""
    config_path, evaluation_path = Path(config_path), Path(evaluation_path)
    load_gate_config(config_path)  # the current file must itself be valid
    # round trip: a hand-kept safety configuration keeps its comments, order and layout; only the
    # point's mode, overrides and approval change
    round_trip = _round_trip_yaml()
    raw = round_trip.load(config_path.read_text(encoding="utf-8"))
    if name not in raw.get("points", {}):
        raise ApprovalError(f"point {name}: not in {config_path} (points: {sorted(raw.get('points', {}))})")
    if not evaluation_path.is_file():
        raise ApprovalError(f"point {name}: evaluation not found: {evaluation_path}")
    report = read_evaluation(evaluation_path)
    if name not in report["evaluations"]:
        raise ApprovalError(f"point {name}: {evaluation_path} does not evaluate this point")
    evaluation = ApprovalEvidence.model_validate(report["evaluations"][name])
    if mode is None and evaluation.recommendation != "promote":
        # nothing to approve: saying "approved" and rewriting a hand-kept safety file would both mislead
        raise ApprovalError(
            f"point {name}: nothing approved, {config_path} unchanged: its evaluation recommends "
            f"{evaluation.recommendation!r} (mode {evaluation.recommended_mode}), not a promotion"
        )
    mode = mode or evaluation.recommended_mode
    entry = raw["points"][name]
    entry["mode"] = mode
    if mode == "control" and evaluation.recommended_overrides:
        entry["overrides"] = evaluation.recommended_overrides  # the one direction it was shown to win
    entry["approval"] = {
        "evaluation": str(evaluation_path.resolve()),
        "sha256": file_sha256(evaluation_path),
        "date": report["evaluated_at"],
        "approved_at": datetime.now(timezone.utc).isoformat(),
    }
    written = io.StringIO()
    round_trip.dump(raw, written)
    text = written.getvalue()
    parse_gate_config(yaml.safe_load(text), config_path)  # refused here (naming the point) if not supported
    temporary = config_path.with_suffix(config_path.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(config_path)
    return entry
