"""A team's own labelled turns recertify a fitted candidate for its catalogue (`adri routing calibrate
--team FILE`): the abstention threshold, the prediction sets' quantile and the drift reference, all
from those turns alone, saved beside the warehouse for `adri routing serve --team-calibration`.

Why: a threshold certified on the fit source's calibration split promises nothing on another
catalogue (its guarantee assumes exchangeable decisions) and, fitted on the sample, answered none of a
new catalogue's turns. Learn then Test on 50-200 of the team's own turns is the same test on the
traffic that will arrive; the bound then holds for that catalogue's turns, at the same risk and
confidence. The turns must not be in the fit data (in-sample confidence would certify too much)."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from pydantic import BaseModel
from scipy.stats import binom

from adri_pipeline.jev import metrics
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.jev.examples import CanonicalExample
from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.run import calibration_rows
from adri_pipeline.routing.thresholds import Bound, across_sources
from adri_pipeline.strict_json import Figure, plain

MAX_GROWTH = 40  # "more turns" is looked for up to 40 times as many as given


class Advice(BaseModel):
    """What more labelled turns would buy: the next threshold down that these turns cannot certify,
    what it would answer, and about how many more turns with the same shares would certify it; None
    turns when no number would (its share wrong is at or above the bound)."""

    threshold: float
    would_answer: float
    more_turns: int | None

    def statement(self, alpha: float) -> str:
        if self.more_turns is None:
            return (
                f"the next threshold down ({self.threshold:.3f}, answering {self.would_answer:.0%}) answers more "
                f"than {alpha:.0%} of the turns wrongly: more turns like these would not certify it"
            )
        return (
            f"about {self.more_turns} more labelled turns like these would certify {self.threshold:.3f}, "
            f"answering {self.would_answer:.0%}"
        )


class TaskCalibration(BaseModel):
    n: int
    bound: Bound
    answered: float  # share of the team's turns the certified threshold answers
    set_quantile: Figure | None = None  # single-answer tasks; null when too few turns to promise a set
    advice: Advice | None = None  # None: nothing lower to reach


class TeamCalibration(BaseModel):
    """The file `adri routing serve --team-calibration` loads."""

    candidate: str
    fitted_on: str
    team_file: str
    team_sha256: str
    created: str
    set_coverage: float
    tasks: dict[str, TaskCalibration]
    drift_reference: list[float] = []  # the team's messages' similarity to the fit data (calibration.Familiarity)

    @property
    def thresholds(self) -> dict[str, float]:
        return {task: t.bound.threshold for task, t in self.tasks.items()}

    @property
    def set_quantiles(self) -> dict[str, float]:
        return {
            task: (math.inf if t.set_quantile is None or t.set_quantile != t.set_quantile else t.set_quantile)
            for task, t in self.tasks.items()
            if task != "D4"
        }

    def save(self, path: Path) -> Path:
        import json

        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(plain(self), indent=2, ensure_ascii=False, allow_nan=False), encoding="utf-8")
        temporary.replace(path)
        return path

    @classmethod
    def load(cls, path: Path) -> TeamCalibration:
        from pydantic import ValidationError

        try:
            return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError) as exc:
            raise RoutingConfigError(f"--team-calibration {path}: not a team calibration file ({exc})") from None


def advice(correct, confidence, bound: Bound) -> Advice | None:
    """The threshold just below the certified one (the walk's stop) and about how many more turns with
    the same shares answered and wrong would certify it (the binomial test of thresholds.learn_then_test
    on k times as many decisions); None when the threshold was dropped because its answers were less
    often right than the turns it withheld (thresholds.ranks): more such turns would not help."""
    correct, confidence = np.asarray(correct, bool), np.asarray(confidence, float)
    below = [t for t in np.unique(confidence)[::-1] if t < bound.threshold]
    if not below or bound.unranked is not None:
        return None
    n, given = len(correct), confidence >= below[0]
    errors = int((given & ~correct).sum())
    found = Advice(threshold=float(below[0]), would_answer=float(given.mean()), more_turns=None)
    if errors / n >= bound.alpha:
        return found
    sizes = np.arange(n + 1, MAX_GROWTH * n + 1)
    certified = binom.cdf(np.floor(errors * sizes / n), sizes, bound.alpha) <= bound.delta
    return found.model_copy(update={"more_turns": int(sizes[certified.argmax()]) - n}) if certified.any() else found


def recalibrate(
    calibrated: Calibrated,
    examples: list[CanonicalExample],
    config: RunConfig,
    team_file: str,
    team_sha256: str,
    fitted_on: str,
) -> TeamCalibration:
    """Per task of the team's turns: Learn then Test (kept unless its answers there are less often right than
    the turns it withholds: thresholds.ranks, own_catalogue) and the conformal quantile on them alone (each
    turn asked once), and their messages' similarity to the fit data as the drift reference."""
    tasks, reference = {}, []
    for task in sorted({e.task for e in examples}):
        rows = calibration_rows(calibrated, [e for e in examples if e.task == task], task, " on the team's turns")
        correct, confidence = [r["correct"] for r in rows], [r["confidence"] for r in rows]
        bound = across_sources(
            correct, confidence, {}, config.threshold_risk, config.threshold_delta, own_catalogue=True
        )
        quantile = (
            None
            if task == "D4"
            else metrics.conformal_quantile([r["gold_probability"] for r in rows], 1 - config.set_coverage)
        )
        answered = float(np.mean(np.asarray(confidence) >= bound.threshold))
        tasks[task] = TaskCalibration(
            n=len(rows),
            bound=bound,
            answered=answered,
            set_quantile=quantile,
            advice=advice(correct, confidence, bound),
        )
        reference += [r["familiarity"] for r in rows if r["familiarity"] is not None]
    return TeamCalibration(
        candidate=calibrated.name,
        fitted_on=fitted_on,
        team_file=team_file,
        team_sha256=team_sha256,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        set_coverage=config.set_coverage,
        tasks=tasks,
        drift_reference=reference if calibrated.familiarity is not None else [],
    )


def summary(team: TeamCalibration, alpha: float) -> list[str]:
    """What the command prints: per task, the bound, what it answers of the team's turns, and what more
    turns would buy."""
    lines = [f"{team.candidate} (fitted on {team.fitted_on}) recertified on {team.team_file}:"]
    for task, t in team.tasks.items():
        lines.append(f"  {task}: {t.n} turns; {t.bound.statement()}; answers {t.answered:.0%} of these turns")
        if t.advice is not None:
            lines.append(f"      {t.advice.statement(alpha)}")
    return lines


def file_digest(path: Path) -> str:
    """sha256 of a canonical file, or of a folder's JSON-lines files in name order."""
    import hashlib

    digest = hashlib.sha256()
    for file in sorted(path.glob("*.jsonl")) if path.is_dir() else [path]:
        digest.update(file.read_bytes())
    return digest.hexdigest()
