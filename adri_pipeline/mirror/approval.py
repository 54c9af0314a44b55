"""Approval bound to evidence: a point that acts on the caller's path (control, veto, warn) names the
evaluation it rests on — file, sha256 and the date the evaluation was made — and that evaluation must
have recommended at least that much authority for that point.

The mirror design's path to control is measured, decision by decision ("Vai decisão a decisão"):
shadow, sample, two judges, comparison, "Controlo numa única direção, se o espelho ganha com
clareza". A bare `approved: true` says none of that; an approval that points at an evaluation does,
and `adri mirror approve POINT --evaluation FILE` is the one way it is written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adri_pipeline.errors import AdriError
from adri_pipeline.mirror.results import ApprovalEvidence

# how much a mode lets the mirror do on the caller's path; an evaluation that recommends one mode
# also supports every weaker acting mode (a promoted point may run as veto or warn instead)
AUTHORITY = {"off": 0, "shadow": 0, "warn": 1, "veto": 2, "control": 3}
EVALUATION_FILE = "mirror_evaluation.json"


class ApprovalError(AdriError, ValueError):
    """The message names the decision point."""


class Approval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    evaluation: Path  # the evaluation report (mirror_evaluation.json); relative to the configuration's folder
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    date: str  # the evaluation's `evaluated_at`
    approved_at: str = ""


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_evaluation(path: Path, content: bytes | None = None) -> dict:
    """The report at `path` (its `content` when already read, e.g. to hash it)."""
    try:
        report = json.loads(path.read_bytes() if content is None else content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApprovalError(f"{path}: not an evaluation report (not JSON: {exc})") from None
    if not isinstance(report, dict) or not isinstance(report.get("evaluations"), dict) or "evaluated_at" not in report:
        raise ApprovalError(f"{path}: not an evaluation report (no `evaluations` and `evaluated_at`)")
    return report


def check_approval(
    name: str, mode: str, threshold: float, approval: Approval | None, base: Path, overrides: list | None = None
) -> ApprovalEvidence | None:
    """Refuse, naming the point, unless `approval` binds `mode` to an evaluation that recommended it,
    and, in control, only moves (`overrides`) that evaluation recommended. The evaluation's evidence
    for an acting point (what its gate watches drift against); None for a point that does not act."""
    if AUTHORITY[mode] == 0:
        return None
    if approval is None:
        raise ApprovalError(
            f"point {name}: mode {mode} needs an approval bound to an evaluation "
            f"(adri mirror approve {name} --evaluation {EVALUATION_FILE})"
        )
    evaluation = _approved_evaluation(name, approval, base)
    if AUTHORITY[mode] > AUTHORITY.get(evaluation.recommended_mode, 0):
        raise ApprovalError(
            f"point {name}: mode {mode} but its evaluation recommended "
            f"{evaluation.recommendation!r} (mode {evaluation.recommended_mode})"
        )
    allowed = {tuple(move) for move in evaluation.recommended_overrides or []}
    if (
        mode == "control"
        and overrides
        and evaluation.recommended_overrides is not None
        and (extra := sorted(list(m) for m in {tuple(m) for m in overrides} - allowed))
    ):
        raise ApprovalError(
            f"point {name}: overrides {extra} were not recommended by its evaluation "
            f"(recommended: {sorted(list(m) for m in allowed)})"
        )
    if threshold < evaluation.threshold:
        raise ApprovalError(
            f"point {name}: threshold {threshold} is below the {evaluation.threshold} its evaluation measured"
        )
    return evaluation


def _approved_evaluation(name: str, approval: Approval, base: Path) -> ApprovalEvidence:
    """Point `name`'s evaluation in the report its approval names, refused unless the report is the very
    one approved (same sha256, same evaluation date) and evaluates the point as adri mirror evaluate
    writes it."""
    path = approval.evaluation if approval.evaluation.is_absolute() else base / approval.evaluation
    if not path.is_file():
        raise ApprovalError(f"point {name}: the evaluation it was approved on is missing: {path}")
    content = path.read_bytes()  # hashed and parsed from one read
    if hashlib.sha256(content).hexdigest() != approval.sha256:
        raise ApprovalError(f"point {name}: {path} changed since the approval (sha256 differs)")
    report = read_evaluation(path, content)
    if report["evaluated_at"] != approval.date:
        raise ApprovalError(
            f"point {name}: approval dated {approval.date} but {path} was evaluated at {report['evaluated_at']}"
        )
    if name not in report["evaluations"]:
        raise ApprovalError(f"point {name}: {path} does not evaluate this point")
    try:
        return ApprovalEvidence.model_validate(report["evaluations"][name])
    except ValidationError as exc:
        raise ApprovalError(
            f"point {name}: {path}: its evaluation is not one adri mirror evaluate writes "
            f"({exc.errors()[0]['loc']}: {exc.errors()[0]['msg']})"
        ) from None
