"""metrics.json as routing/results.py writes and reads it."""

import json
import math

import pytest

from adri_pipeline import strict_json
from adri_pipeline.jev.metrics import NotEnoughData
from adri_pipeline.routing.results import H1, H2, H3, BenchmarkReport, Hypotheses, SelectiveGain, TaskFigures

NAN = float("nan")


def _report() -> BenchmarkReport:
    """A run whose candidate abstained on every D1 decision (no selective accuracy) and whose H2 had
    one decision to resample."""
    nothing_kept = TaskFigures(
        n=3,
        accuracy=2 / 3,
        majority_baseline_accuracy=1 / 3,
        high_confidence_wrong_rate=0.0,
        high_confidence_wrong_rate_fixed=0.0,
        ece=0.1,
        mce=0.2,
        aurc=0.3,
        coverage_at_threshold=0.0,
        selective_accuracy_at_threshold=NAN,
        reliability=[],
    )
    h2 = H2(
        verdict="not supported",
        min_coverage=0.5,
        tasks={
            "D1": SelectiveGain(
                verdict="not supported",
                n=1,
                coverage=1.0,
                selective_accuracy=1.0,
                full_coverage_accuracy=1.0,
                gain_ci95=NotEnoughData.at(1),
            )
        },
    )
    h3 = H3(
        verdict="not evaluated",
        p95_per_turn_ms=NAN,
        target_p95_ms=100.0,
        cost_per_1000_usd=NAN,
        shape="cpu",
        compared_with_cost_per_1000_usd=0.5,
        compared_with="stated price",
        independent_runs=0,
    )
    return BenchmarkReport(
        config={"d1": nothing_kept.model_dump()},
        test_hash="0" * 64,
        results={},
        hypotheses={"a": Hypotheses(H1=H1(verdict="not evaluated"), H2=h2, H3=h3)},
        annotator_agreement={"cohen_kappa": NAN},
        departures=[],
    )


def test_metrics_json_parses_strictly_and_reads_back_the_same(tmp_path):
    """Failed before: bare NaN (`selective_accuracy_at_threshold`, H3's p95), which strict parsers refuse."""
    path = tmp_path / "metrics.json"
    _report().write(path)
    text = path.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="NaN is not JSON"):
        strict_json.loads('{"a": NaN}')
    figures = strict_json.loads(text)
    assert figures["config"]["d1"]["selective_accuracy_at_threshold"] is None
    assert figures["hypotheses"]["a"]["H2"]["tasks"]["D1"]["gain_ci95"] == {"n": 1, "reason": "not enough data (n = 1)"}
    back = BenchmarkReport.read(path)
    assert math.isnan(back.hypotheses["a"].H3.p95_per_turn_ms)
    assert back.hypotheses["a"].H2.tasks["D1"].gain_ci95 == NotEnoughData.at(1)
    assert json.loads(text) == figures


def test_the_report_says_why_an_interval_is_missing():
    """Failed before: the markdown formatted an interval as two numbers, whatever it held."""
    from adri_pipeline.routing.report import _detail

    gain = _report().hypotheses["a"].H2.tasks["D1"].model_dump()
    assert _detail("D1", gain) == (
        "D1 not supported [n=1, coverage=1.000, selective_accuracy=1.000, "
        "full_coverage_accuracy=1.000, gain_ci95: not enough data (n = 1)]"
    )
