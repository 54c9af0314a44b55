"""Evaluation reports for tests that need a point in an acting mode: every acting point must carry
an approval bound to an evaluation that recommended its mode (mirror/approval.py)."""

import atexit
import json
import shutil
import tempfile
from pathlib import Path

from adri_pipeline.mirror.approval import Approval, file_sha256
from adri_pipeline.mirror.gate_config import DecisionPoint, GateConfig

EVALUATED_AT = "2026-11-30T12:00:00+00:00"
_FOLDER = Path(tempfile.mkdtemp(prefix="adri-evidence-"))
atexit.register(shutil.rmtree, _FOLDER, ignore_errors=True)


def evaluation_report(
    path: Path, recommended: dict[str, str], threshold: float = 0.85, confidences: dict[str, list[float]] | None = None
) -> Path:
    """A report as `adri mirror evaluate` writes it, reduced to what an approval checks (and, per
    point in `confidences`, the mirror's confidences it kept for the gate's drift monitor)."""
    path.write_text(
        json.dumps(
            {
                "evaluated_at": EVALUATED_AT,
                "evaluations": {
                    name: {
                        "recommendation": "promote" if mode in ("control", "veto", "warn") else "keep shadow",
                        "recommended_mode": mode,
                        "threshold": threshold,
                        "confidence_reference": (confidences or {}).get(name, []),
                    }
                    for name, mode in recommended.items()
                },
            }
        )
    )
    return path


def approval_for(path: Path) -> Approval:
    return Approval(evaluation=path, sha256=file_sha256(path), date=EVALUATED_AT)


def approved(
    points: dict[str, DecisionPoint], confidences: dict[str, list[float]] | None = None, **config
) -> GateConfig:
    """A configuration whose acting points rest on an evaluation that recommended exactly their modes
    (at the lowest of their thresholds)."""
    path = evaluation_report(
        Path(tempfile.mkstemp(suffix=".json", dir=_FOLDER)[1]),
        {name: point.mode for name, point in points.items()},
        min((p.threshold for p in points.values()), default=0.85),
        confidences,
    )
    approval = approval_for(path)
    return GateConfig(
        points={name: point.model_copy(update={"approval": approval}) for name, point in points.items()}, **config
    )
