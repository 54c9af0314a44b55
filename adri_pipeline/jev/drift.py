"""Drift watched while serving: are the inputs arriving like the ones a typed-decision model was
calibrated on? The mirror design: "Quando falha com confiança, costuma faltar-lhe informação" — a
candidate fitted on one catalogue answered with full confidence on traffic unlike anything it had seen.

The last `window` values of a signal are compared with the calibration's by a two-sample
Kolmogorov-Smirnov test (scipy.stats.ks_2samp); below `alpha` the traffic has drifted, and the model
is not used until a window passes the test again. Two signals (`Signal`):

- SIMILARITY, `adri routing serve`: each message's cosine similarity to the nearest fit message
  (routing/calibration.Familiarity), one-sided (only live similarities lower than the reference);
- CONFIDENCE, the mirror gate: the mirror's probability for its answer against its probabilities on
  the shadow traffic its evaluation judged, two-sided (a remote mirror's embeddings are not at hand,
  and out of source its confidence moves either way).

On a test split drawn like the calibration split the alarm is the test's false-alarm rate; the
benchmark reports it (`replay`) beside the rate on out-of-source sets."""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import ks_2samp

log = logging.getLogger(__name__)

WINDOW = 20
ALPHA = 0.001


@dataclass(frozen=True)
class Signal:
    """What a monitor watches: its name in log lines, the side of the KS test, what it is, and what
    happens while drifted (for the log line)."""

    watcher: str  # "routing drift detected", "mirror point p drift detected"
    alternative: Literal["greater", "two-sided"]  # ks_2samp's: "greater", live values lower than the reference
    description: str
    while_drifted: str = "abstaining"


SIMILARITY = Signal("routing", "greater", "similarity to the nearest fit message, two-sample Kolmogorov-Smirnov "
                                          "against the calibration split's")
CONFIDENCE = Signal("mirror", "two-sided", "the mirror's probability for its answer, two-sample Kolmogorov-Smirnov "
                                           "against its probabilities on the evaluated shadow traffic",
                    "the rule decides")


class DriftMonitor:
    """The last `window` values of `signal` against the `reference` ones; thread-safe."""

    def __init__(self, reference, window: int = WINDOW, alpha: float = ALPHA, announce: bool = True,
                 signal: Signal = SIMILARITY):
        self.reference = np.asarray(reference, float)
        self.announce = announce  # a log line when the traffic drifts and when it returns (serving)
        self.window, self.alpha, self.signal = window, alpha, signal
        self.recent: deque[float] = deque(maxlen=window)
        self.drifted = False
        self.p_value = 1.0
        self.served = self.abstained = self.alarms = self.recoveries = 0
        self._lock = threading.Lock()

    def observe(self, value: float) -> bool:
        """Take one served input's value of the signal; True while the traffic has drifted (abstain)."""
        with self._lock:
            self.served += 1
            self.recent.append(float(value))
            if len(self.recent) == self.window:
                self.p_value = float(ks_2samp(np.asarray(self.recent), self.reference,
                                              alternative=self.signal.alternative).pvalue)
                now = self.p_value < self.alpha
                if now != self.drifted:
                    self.alarms += now
                    self.recoveries += not now
                if now != self.drifted and self.announce:
                    log.warning("%s drift %s: the last %d inputs against %d calibration inputs, KS p = %.2g "
                                "(alpha %.2g); %s", self.signal.watcher, "detected" if now else "over", self.window,
                                len(self.reference), self.p_value, self.alpha,
                                f"{self.signal.while_drifted} until traffic returns" if now else "answering again")
                self.drifted = now
            self.abstained += self.drifted
            return self.drifted

    def counters(self) -> dict:
        with self._lock:
            return {"drifted": self.drifted, "p_value": self.p_value, "window": self.window, "alpha": self.alpha,
                    "reference_messages": len(self.reference), "served": self.served, "abstained": self.abstained,
                    "alarms": self.alarms, "recoveries": self.recoveries, "signal": self.signal.description}


def replay(reference, values, window: int = WINDOW, alpha: float = ALPHA, signal: Signal = SIMILARITY) -> float:
    """Share of a stream's decisions (after its first full window) taken while the monitor said
    drifted: on an in-source stream, the false-alarm rate; out of source, how often it fires.
    NaN when the stream is shorter than a window."""
    monitor = DriftMonitor(reference, window, alpha, announce=False, signal=signal)  # a replay: no log lines
    flags = [monitor.observe(v) for v in values]
    tail = flags[window - 1:]
    return float(np.mean(tail)) if tail else float("nan")
