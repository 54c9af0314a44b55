"""The mirror evaluation as types: what an approval rests on (`ApprovalEvidence`, all a running gate
reads of an evaluation), one decision point's whole evaluation (`PointEvaluation`, evaluate_point),
and the dated report an approval is bound to (`MirrorReport`, mirror_evaluation.json)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from adri_pipeline import strict_json
from adri_pipeline.jev.metrics import NotEnoughData
from adri_pipeline.strict_json import Figure


class ApprovalEvidence(BaseModel):
    """The part of a point's evaluation an approval checks (mirror/approval.py): a report's other
    figures may be added or renamed without a running gate reading them."""

    model_config = ConfigDict(extra="allow")

    recommendation: str = ""
    recommended_mode: str = "shadow"
    threshold: float = 1.0
    recommended_overrides: list[list[str]] | None = None  # None: the report predates one-directional control
    # the mirror's probabilities for its answers on the traffic evaluated (sorted; quantiles past
    # evaluate.REFERENCE_SIZE): what a running gate's drift monitor compares live ones with (jev/drift.py)
    confidence_reference: list[float] = []


class PointEvaluation(ApprovalEvidence):
    """Rule against mirror on the judged shadow decisions of one point (mirror/evaluate.py)."""

    model_config = ConfigDict(extra="forbid")

    decision_point: str
    logged: int
    with_mirror: int
    sampled: int
    disagreements_sampled: int
    judge_agreement_rate: Figure
    counted: int  # cases both judges labelled alike
    rule_accuracy: Figure
    mirror_accuracy: Figure
    rule_accuracy_when_mirror_confident: Figure
    mirror_accuracy_when_confident: Figure
    control_accuracy: Figure  # what control would have returned, in the recommended directions
    coverage_at_threshold: Figure
    high_confidence_errors: int
    latency_ms: dict[str, Figure]
    cost_per_decision_usd: Figure
    hourly_price_usd: Figure
    machine_shape: str = ""
    dropped_or_failed: int
    dropped_queue_full: int
    failure_diagnosis: dict
    gain_ci95: list[Figure] | NotEnoughData  # too few confident cases: the reason, not nan
    shadow_days: int
    first_day: str | None
    last_day: str | None
    min_shadow_days: int
    min_agreed_cases: int
    overrides: list[dict]  # every direction the mirror moved the rule's answer, with its figures
    recommended_overrides: list[list[str]] = []
    reasons: list[str]


class MirrorReport(BaseModel):
    evaluated_at: str
    log: str
    log_sha256: str
    # each judge's name, source, family or annotator, cases labelled; the log lines kept, and the bad
    # ones with their reason (the Dagster asset, which evaluates stored judgements, has neither at hand)
    judges: list[dict] = []
    kept: int | None = None
    quarantined: list[dict] = []
    evaluations: dict[str, PointEvaluation]
    recommended_configuration: str

    @staticmethod
    def stored(evaluation: str) -> PointEvaluation:
        """A point's evaluation as the warehouse stores it (mirror_evaluations.evaluation)."""
        return PointEvaluation.model_validate(json.loads(evaluation))

    def write(self, path: Path) -> None:
        """Strict JSON (`jq`, a browser, any parser): a figure that could not be computed is null, never NaN."""
        strict_json.write(path, self)
