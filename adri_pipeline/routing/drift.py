"""Drift watched while serving: are the messages arriving like the ones the candidate was calibrated
on? The mirror design: "Quando falha com confiança, costuma faltar-lhe informação" — a candidate
fitted on one catalogue answered with full confidence on traffic unlike anything it had seen.

The signal is each message's cosine similarity to the nearest fit message (calibration.Familiarity):
the last `window` messages served are compared with the calibration split's messages by a two-sample
Kolmogorov-Smirnov test (scipy.stats.ks_2samp, one-sided: live similarities lower than the reference).
Below `alpha` the traffic has drifted: the candidate abstains until a window passes the test again.
On a test split drawn like the calibration split the alarm is the test's false-alarm rate; the
benchmark reports it (`replay`) beside the rate on out-of-source sets."""

from __future__ import annotations

import logging
import threading
from collections import deque

import numpy as np
from scipy.stats import ks_2samp

log = logging.getLogger(__name__)

WINDOW = 20
ALPHA = 0.001


class DriftMonitor:
    """The last `window` similarities against the `reference` ones; thread-safe."""

    def __init__(self, reference, window: int = WINDOW, alpha: float = ALPHA, announce: bool = True):
        self.reference = np.asarray(reference, float)
        self.announce = announce  # a log line when the traffic drifts and when it returns (serving)
        self.window, self.alpha = window, alpha
        self.recent: deque[float] = deque(maxlen=window)
        self.drifted = False
        self.p_value = 1.0
        self.served = self.abstained = self.alarms = self.recoveries = 0
        self._lock = threading.Lock()

    def observe(self, similarity: float) -> bool:
        """Take one served message's similarity; True while the traffic has drifted (abstain)."""
        with self._lock:
            self.served += 1
            self.recent.append(float(similarity))
            if len(self.recent) == self.window:
                self.p_value = float(ks_2samp(np.asarray(self.recent), self.reference, alternative="greater").pvalue)
                now = self.p_value < self.alpha
                if now != self.drifted:
                    self.alarms += now
                    self.recoveries += not now
                if now != self.drifted and self.announce:
                    log.warning("routing drift %s: the last %d messages against %d calibration messages, "
                                "KS p = %.2g (alpha %.2g); %s", "detected" if now else "over", self.window,
                                len(self.reference), self.p_value, self.alpha,
                                "abstaining until traffic returns" if now else "answering again")
                self.drifted = now
            self.abstained += self.drifted
            return self.drifted

    def counters(self) -> dict:
        with self._lock:
            return {"drifted": self.drifted, "p_value": self.p_value, "window": self.window, "alpha": self.alpha,
                    "reference_messages": len(self.reference), "served": self.served, "abstained": self.abstained,
                    "alarms": self.alarms, "recoveries": self.recoveries, "signal": "similarity to the nearest fit "
                    "message, two-sample Kolmogorov-Smirnov against the calibration split's"}


def replay(reference, similarities, window: int = WINDOW, alpha: float = ALPHA) -> float:
    """Share of a stream's decisions (after its first full window) taken while the monitor said
    drifted: on an in-source stream, the false-alarm rate; out of source, how often it fires.
    NaN when the stream is shorter than a window."""
    monitor = DriftMonitor(reference, window, alpha, announce=False)  # a replay, not traffic: no log lines
    flags = [monitor.observe(s) for s in similarities]
    tail = flags[window - 1:]
    return float(np.mean(tail)) if tail else float("nan")
