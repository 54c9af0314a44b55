"""What the report's departures say about thresholds (routing/departures.py)."""

import numpy as np
import polars as pl

from adri_pipeline.routing.departures import _uncertified
from adri_pipeline.routing.performance import Measured
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.run import CandidateRun
from adri_pipeline.routing.thresholds import across_sources


def _run(name: str, bounds: dict) -> CandidateRun:
    run = CandidateRun(name, pl.DataFrame(), {}, {}, 0, Measured([], 0))
    run.threshold_bounds = {task: bound.model_dump() for task, bound in bounds.items()}
    return run


def test_a_threshold_not_kept_because_confidence_does_not_rank_is_named_with_its_reason():
    """It used to read as "needs at least 45 calibration decisions", which was not why."""
    confidence = np.linspace(0.01, 0.3, 293)
    confidence[-4:] = [0.39, 0.40, 0.41, 0.42]
    correct = np.zeros(293, bool)
    correct[:118], correct[-4:] = True, [True, False, True, False]
    catalogue = np.arange(293) % 31
    unranked = across_sources(
        np.ones(19, bool), np.full(19, 0.5), {"team": (correct, confidence, catalogue)}, 0.05, 0.1
    )
    too_few = across_sources(np.ones(19, bool), np.full(19, 0.5), {}, 0.05, 0.1)
    ranked = across_sources(np.ones(100, bool), np.linspace(0.5, 1, 100), {}, 0.05, 0.1)
    lines = _uncertified(
        RunConfig(), {"zs": _run("zs", {"D2": unranked, "D1": ranked}), "lr": _run("lr", {"D4": too_few, "D1": ranked})}
    )
    assert len(lines) == 2
    assert "for D4 (" in lines[0] and "D2" not in lines[0]
    assert "zs on D2 was not kept" in lines[1] and "H2" in lines[1] and "lr" not in lines[1]
