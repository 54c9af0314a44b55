"""The serving drift monitor (jev/drift.py) on streams whose drift is known."""

import numpy as np

from adri_pipeline.jev.drift import LEVEL, WINDOW, DriftMonitor, replay


def test_quiet_on_traffic_like_the_calibration_and_firing_on_traffic_unlike_it():
    rng = np.random.default_rng(3)
    reference = rng.normal(0.90, 0.03, 200)
    assert replay(reference, rng.normal(0.90, 0.03, 500)) <= 0.02
    monitor = DriftMonitor(reference, announce=False)
    flags = [monitor.observe(v) for v in rng.normal(0.80, 0.03, 200)]
    assert flags.index(True) < WINDOW and all(flags[WINDOW:])  # detected within a window, kept while it lasts


def test_the_chance_of_ever_raising_a_false_alarm_is_at_most_the_stated_level():
    """Ville's inequality, checked by simulation: streams as long as a day of traffic drawn like the
    calibration's (the reference drawn with them), each watched to its end; the share that ever alarmed
    stays within the level plus three Monte Carlo standard errors. A window tested at every input (the
    former monitor) has no such bound: its false alarms grow with the stream."""
    rng = np.random.default_rng(11)
    streams, length = 400, 1000
    ever = 0
    for _ in range(streams):
        values = rng.beta(8, 2, 200 + length)  # a similarity-like law: skewed, bounded
        monitor = DriftMonitor(values[:200], announce=False)
        ever += any(monitor.observe(v) for v in values[200:])
    assert ever / streams <= LEVEL + 3 * np.sqrt(LEVEL * (1 - LEVEL) / streams)


def test_it_abstains_while_drifted_counts_the_alarm_and_recovers():
    rng = np.random.default_rng(4)
    monitor = DriftMonitor(rng.normal(0.90, 0.03, 200))
    assert not any(monitor.observe(s) for s in rng.normal(0.90, 0.03, WINDOW))
    flags = [monitor.observe(s) for s in rng.normal(0.75, 0.03, WINDOW)]
    assert flags[-1] and monitor.counters()["alarms"] == 1 and monitor.counters()["drifted"]
    flags = [monitor.observe(s) for s in rng.normal(0.90, 0.03, WINDOW)]
    assert not flags[-1]
    counters = monitor.counters()
    assert counters["recoveries"] == 1 and counters["served"] == 3 * WINDOW and 0 < counters["abstained"] < 2 * WINDOW


def test_messages_more_familiar_than_the_calibration_are_not_drift():
    """One-sided: traffic closer to the fit data than the calibration split never abstains."""
    rng = np.random.default_rng(5)
    assert replay(rng.normal(0.85, 0.03, 200), rng.normal(0.97, 0.01, 200)) == 0.0


def test_serving_says_when_traffic_drifts_and_a_benchmark_replay_says_nothing(caplog):
    """Failed before: the benchmark's replays printed serving's drift warnings into the demo's output."""
    rng = np.random.default_rng(6)
    reference, shifted = rng.normal(0.90, 0.03, 200), rng.normal(0.75, 0.03, WINDOW)
    with caplog.at_level("WARNING", logger="adri_pipeline.jev.drift"):
        replay(reference, shifted)
        assert not caplog.records
        monitor = DriftMonitor(reference)
        for s in shifted:
            monitor.observe(s)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["routing drift detected"]
