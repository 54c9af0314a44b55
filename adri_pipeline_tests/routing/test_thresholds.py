"""The abstention threshold's guarantee (routing/thresholds.py), checked where the truth is known."""

import numpy as np

from adri_pipeline.routing.thresholds import ABSTAIN_ALL, learn_then_test


def _calibrated_draw(rng, n):
    """A calibrated model: confidence uniform, right with probability equal to its confidence. The
    share of decisions answered wrongly at threshold t is then (1 - t)^2 / 2."""
    confidence = rng.uniform(0, 1, n)
    return rng.uniform(0, 1, n) < confidence, confidence


def test_the_bound_holds_in_at_least_one_minus_delta_of_calibration_draws():
    rng = np.random.default_rng(0)
    alpha, delta = 0.05, 0.10
    safe = 1 - np.sqrt(2 * alpha)  # the lowest threshold whose true share is <= alpha
    chosen = [learn_then_test(*_calibrated_draw(rng, 300), alpha=alpha, delta=delta).threshold for _ in range(400)]
    violations = np.mean([t < safe for t in chosen])
    assert violations <= delta
    assert np.median(chosen) < safe + 0.12  # and it answers: not a threshold of 1 dressed as a guarantee


def test_too_few_calibration_decisions_certify_nothing_and_the_candidate_abstains():
    """(1 - 0.05)^n <= 0.10 needs n >= 45: below it even a model right on every decision is not certified."""
    bound = learn_then_test([True] * 44, np.linspace(0.5, 1, 44), alpha=0.05, delta=0.10)
    assert bound.threshold == ABSTAIN_ALL and "none certifiable" in bound.statement()
    bound = learn_then_test([True] * 45, np.linspace(0.5, 1, 45), alpha=0.05, delta=0.10)
    assert bound.threshold == 0.5 and bound.calibration_answered == 45 and bound.calibration_wrong == 0


def test_the_walk_stops_at_the_first_threshold_it_cannot_certify():
    """Confident mistakes at the top of the ranking stop the walk there, whatever lies below."""
    confidence = np.linspace(1, 0.01, 200)
    correct = np.ones(200, bool)
    correct[:12] = False  # the 12 most confident answers are wrong: 6 % of all decisions
    bound = learn_then_test(correct, confidence, alpha=0.05, delta=0.10)
    assert bound.calibration_wrong <= 5 and bound.threshold > confidence[12]
