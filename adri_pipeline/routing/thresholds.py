"""The abstention threshold, chosen with a guarantee (Learn then Test: Angelopoulos, Bates, Candès,
Jordan and Lei, 2021): the lowest confidence threshold at which the share of decisions answered
wrongly — wrong and at or above the threshold, so nothing asks the user again — is at most `alpha`,
with probability at least 1 - `delta` over the draw of the calibration split, provided later decisions
are exchangeable with it. That share is the JEV design's measure of greatest operational impact ("taxa
de rota errada com confiança alta") and the report's wrong@thr.

The procedure: candidate thresholds from above the highest calibration confidence down (fixed-sequence
testing, which needs no multiplicity correction); at each, the null "the share exceeds alpha" is
tested with the exact binomial tail of the calibration decisions answered wrongly at that threshold
(scipy.stats.binom); the walk stops at the first threshold whose null cannot be rejected at level
delta, and the threshold is the last rejected one. The share only grows as the threshold falls, so the
walk loses nothing by stopping. The rate among the answers given (selective error) is not what is
bounded: at high thresholds it rests on a handful of answers, no test can reject there, and a fixed
sequence would stop before it started. With too few calibration decisions nothing is certified and the
candidate abstains on every decision: 45 are the fewest for alpha 0.05 and delta 0.10.

MAPIE's risk controllers (mapie.risk_control) run Learn then Test over a scikit-learn classifier's
predict_proba; a candidate here is a System One answer's confidence, not an estimator, and the test
is one binomial tail per threshold, so scipy's distribution is used directly."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel
from scipy.stats import binom

ABSTAIN_ALL = 1.01  # no confidence reaches it


class Bound(BaseModel):
    """What a task's threshold guarantees, and what calibration showed at it."""

    threshold: float
    alpha: float  # the bound on the share of decisions answered wrongly
    delta: float  # the bound holds with probability >= 1 - delta
    calibration_n: int
    calibration_answered: int
    calibration_wrong: int  # answered wrongly at the threshold
    assumption: str = "test decisions exchangeable with the calibration split's"

    def statement(self) -> str:
        if self.threshold > 1:
            return (f"none certifiable: {self.calibration_n} calibration decisions cannot show wrong answers "
                    f"<= {self.alpha:.0%} of decisions at {1 - self.delta:.0%} confidence, so it abstains on all")
        return (f"answered wrongly <= {self.alpha:.0%} of decisions with probability >= {1 - self.delta:.0%} "
                f"(threshold {self.threshold:.3f}; calibration: {self.calibration_wrong} wrong of "
                f"{self.calibration_answered} answered of {self.calibration_n})")


def learn_then_test(correct, confidence, alpha: float, delta: float) -> Bound:
    """The lowest threshold certified by fixed-sequence binomial tests (module docstring)."""
    correct = np.asarray(correct, bool)
    confidence = np.asarray(confidence, float)
    n = len(correct)
    chosen, answered, wrong = ABSTAIN_ALL, 0, 0
    if n and binom.cdf(0, n, alpha) <= delta:  # answering nothing: no wrong answer; certifiable at all?
        for threshold in np.unique(confidence)[::-1]:
            given = confidence >= threshold
            errors = int((given & ~correct).sum())
            if binom.cdf(errors, n, alpha) > delta:  # p-value of "share > alpha": not rejected, stop
                break
            chosen, answered, wrong = float(threshold), int(given.sum()), errors
    return Bound(threshold=chosen, alpha=alpha, delta=delta, calibration_n=n, calibration_answered=answered,
                 calibration_wrong=wrong)
