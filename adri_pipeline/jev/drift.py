"""Drift watched while serving: are the inputs arriving like the ones a typed-decision model was
calibrated on? The mirror design: "Quando falha com confiança, costuma faltar-lhe informação" — a
candidate fitted on one catalogue answered with full confidence on traffic unlike anything it had seen.

The alarm is a sequential test with a stated level: a conformal test martingale (Vovk, Nouretdinov and
Gammerman, "Testing randomness online", Statistical Science 2021). Each input's value of a signal gets a
conformal p-value, its rank among the calibration's values and the inputs since the monitor (re)started;
the martingale bets on those p-values with the Simple Jumper's betting functions and raises the alarm
when its capital reaches 1 / `level`. While the inputs are exchangeable with the calibration's, the
p-values are independent and uniform, and Ville's inequality bounds the probability that the alarm is
**ever** raised by `level`, however long the monitor watches — a window tested again at every input
(the former Kolmogorov-Smirnov monitor) has no such bound: its false alarms grow with the stream.

The drift is over when the last `window` inputs pass a two-sample Kolmogorov-Smirnov test against the
calibration's at `recovery_level` (scipy.stats.ks_2samp); the martingale then starts again. Two signals
(`Signal`):

- SIMILARITY, `adri routing serve`: each message's cosine similarity to the nearest fit message
  (routing/calibration.Familiarity), one-sided (only live similarities lower than the reference);
- CONFIDENCE, the mirror gate: the mirror's probability for its answer against its probabilities on
  the shadow traffic its evaluation judged, two-sided (a remote mirror's embeddings are not at hand,
  and out of source its confidence moves either way).

On a test split drawn like the calibration split the share of decisions taken while drifted is the
realized false alarm; the benchmark reports it (`replay`) beside the share on out-of-source sets."""

from __future__ import annotations

import bisect
import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import ks_2samp

log = logging.getLogger(__name__)

WINDOW = 20
LEVEL = 0.01  # the probability of ever raising a false alarm, while traffic is like the calibration's
RECOVERY_LEVEL = 0.05  # the Kolmogorov-Smirnov level a window must pass for the drift to be over
JUMP = 0.01  # the Simple Jumper's rate of moving capital between its betting functions


@dataclass(frozen=True)
class Signal:
    """What a monitor watches: its name in log lines, the side it watches (ks_2samp's alternative:
    "greater", live values lower than the reference; "two-sided"), what it is, and what happens while
    drifted (for the log line)."""

    watcher: str  # "routing drift detected", "mirror point p drift detected"
    alternative: Literal["greater", "two-sided"]
    description: str
    while_drifted: str = "abstaining"

    @property
    def bets(self) -> tuple[float, ...]:
        """The Simple Jumper's betting functions f(p) = 1 + e (p - 1/2) it mixes: e = -1 bets on small
        p-values (values lower than the calibration's), +1 on large ones, 0 keeps its capital."""
        return (-1.0, 0.0) if self.alternative == "greater" else (-1.0, 0.0, 1.0)


SIMILARITY = Signal(
    "routing",
    "greater",
    "similarity to the nearest fit message; conformal test martingale against the calibration split's",
)
CONFIDENCE = Signal(
    "mirror",
    "two-sided",
    "the mirror's probability for its answer; conformal test martingale "
    "against its probabilities on the evaluated shadow traffic",
    "the rule decides",
)


class ConformalMartingale:
    """The Simple Jumper over conformal p-values (module docstring): `capital` starts at 1; each value's
    p-value is its smoothed rank among the reference and the values seen since, ties broken by a seeded
    uniform draw."""

    def __init__(self, reference: np.ndarray, bets: tuple[float, ...], seed: int = 0):
        self.seen = sorted(float(v) for v in reference)
        self.bets = np.asarray(bets, float)
        self.split = np.full(len(bets), 1.0 / len(bets))  # the capital held by each betting function
        self.capital = 1.0
        self._random = np.random.default_rng(seed)

    def p_value(self, value: float) -> float:
        lower = bisect.bisect_left(self.seen, value)
        ties = bisect.bisect_right(self.seen, value) - lower
        return (lower + self._random.uniform() * (ties + 1)) / (len(self.seen) + 1)

    def observe(self, value: float) -> float:
        """The capital after betting on `value`'s p-value."""
        p = self.p_value(value)
        bisect.insort(self.seen, float(value))
        self.split = (1 - JUMP) * self.split + JUMP * self.split.sum() / len(self.split)
        self.split = self.split * (1 + self.bets * (p - 0.5))
        self.capital = float(self.split.sum())
        return self.capital


class DriftMonitor:
    """`signal`'s live values against the `reference` ones (module docstring): the alarm when the
    conformal test martingale reaches 1 / `level`, the drift over when the last `window` values pass
    Kolmogorov-Smirnov at `recovery_level`; thread-safe."""

    def __init__(
        self,
        reference,
        window: int = WINDOW,
        level: float = LEVEL,
        announce: bool = True,
        signal: Signal = SIMILARITY,
        recovery_level: float = RECOVERY_LEVEL,
    ):
        self.reference = np.asarray(reference, float)
        self.announce = announce  # a log line when the traffic drifts and when it returns (serving)
        self.window, self.level, self.recovery_level, self.signal = window, level, recovery_level, signal
        self.recent: deque[float] = deque(maxlen=window)
        self.martingale = ConformalMartingale(self.reference, signal.bets)
        self.drifted = False
        self.p_value = 1.0  # the last window's Kolmogorov-Smirnov p-value, while drifted
        self.served = self.abstained = self.alarms = self.recoveries = 0
        self._lock = threading.Lock()

    def observe(self, value: float) -> bool:
        """Take one served input's value of the signal; True while the traffic has drifted (abstain)."""
        with self._lock:
            self.served += 1
            self.recent.append(float(value))
            if not self.drifted and self.martingale.observe(value) >= 1 / self.level:
                self._turn(True, f"conformal test martingale {self.martingale.capital:.3g} >= 1/{self.level:g}")
            elif self.drifted and len(self.recent) == self.window:
                self.p_value = float(
                    ks_2samp(np.asarray(self.recent), self.reference, alternative=self.signal.alternative).pvalue
                )
                if self.p_value >= self.recovery_level:
                    self._turn(
                        False,
                        f"the last {self.window} inputs against {len(self.reference)} calibration "
                        f"inputs, KS p = {self.p_value:.2g} >= {self.recovery_level:g}",
                    )
            self.abstained += self.drifted
            return self.drifted

    def _turn(self, drifted: bool, why: str) -> None:
        """Drift detected, or over: counted, said once (serving), and the martingale started again."""
        self.drifted = drifted
        self.alarms += drifted
        self.recoveries += not drifted
        if not drifted:
            self.martingale = ConformalMartingale(self.reference, self.signal.bets, seed=self.recoveries)
        if self.announce:
            log.warning(
                "%s drift %s: %s; %s",
                self.signal.watcher,
                "detected" if drifted else "over",
                why,
                f"{self.signal.while_drifted} until traffic returns" if drifted else "answering again",
            )

    def counters(self) -> dict:
        with self._lock:
            return {
                "drifted": self.drifted,
                "p_value": self.p_value,
                "martingale": self.martingale.capital,
                "level": self.level,
                "window": self.window,
                "recovery_level": self.recovery_level,
                "reference_messages": len(self.reference),
                "served": self.served,
                "abstained": self.abstained,
                "alarms": self.alarms,
                "recoveries": self.recoveries,
                "signal": self.signal.description,
            }


def replay(reference, values, window: int = WINDOW, level: float = LEVEL, signal: Signal = SIMILARITY) -> float:
    """Share of a stream's decisions taken while the monitor said drifted: on an in-source stream,
    the realized false alarm; out of source, how often it fires. NaN for an empty stream."""
    monitor = DriftMonitor(reference, window, level, announce=False, signal=signal)  # a replay: no log lines
    flags = [monitor.observe(v) for v in values]
    return float(np.mean(flags)) if flags else float("nan")
