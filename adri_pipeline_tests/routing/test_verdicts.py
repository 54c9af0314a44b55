"""H1 and H2 as routing/verdicts.py gives them."""

import pytest

from adri_pipeline.routing.protocol import RunConfig


def _run(name, correct):
    import polars as pl

    from adri_pipeline.routing.performance import Measured
    from adri_pipeline.routing.run import CandidateRun

    frame = pl.DataFrame(
        {"example_id": [f"e{i}" for i in range(len(correct))], "task": ["D1"] * len(correct), "correct": correct}
    )
    return CandidateRun(name, frame, {}, {}, 0, Measured([], 0))


@pytest.mark.parametrize(
    "mine, llm, verdict",
    [
        ([True] * 475 + [False] * 25, [True] * 480 + [False] * 20, "non-inferior"),  # 1 pp behind
        ([True] * 300 + [False] * 200, [True] * 475 + [False] * 25, "inferior"),  # 35 pp behind
    ],
)
def test_h1_is_a_paired_bootstrap_against_the_margin(mine, llm, verdict):
    import numpy as np

    from adri_pipeline.routing.verdicts import _non_inferiority

    result = _non_inferiority(
        _run("a", mine).predictions, _run("ollama:x", llm).predictions, "D1", RunConfig(), np.random.default_rng(1)
    )
    assert result.verdict == verdict and result.n == 500
    assert result.gap_ci95_pp[0] <= result.gap_pp <= result.gap_ci95_pp[1]


def test_h1_says_nothing_on_fewer_paired_decisions_than_its_minimum():
    """Two identical routers on 100 decisions: an interval of [0, 0] would call them non-inferior;
    below the minimum (427 at 3 pp) the verdict is "inconclusive", saying why."""
    import numpy as np

    from adri_pipeline.routing.verdicts import _non_inferiority, h1_min_decisions

    same = [True] * 90 + [False] * 10
    assert h1_min_decisions(RunConfig()) == 427
    result = _non_inferiority(
        _run("a", same).predictions, _run("ollama:x", same).predictions, "D1", RunConfig(), np.random.default_rng(1)
    )
    assert result.gap_ci95_pp == [0.0, 0.0] and result.verdict == "inconclusive"
    assert result.reason == "100 paired test decisions; a verdict needs at least 427"
    lowered = _non_inferiority(
        _run("a", same).predictions,
        _run("ollama:x", same).predictions,
        "D1",
        RunConfig(h1_min_decisions=50),
        np.random.default_rng(1),
    )
    assert lowered.verdict == "non-inferior"


@pytest.mark.parametrize("n", [0, 1, 2])
def test_h1_on_fewer_than_two_paired_decisions_says_there_is_not_enough_data(n):
    """Failed before: scipy's "two or more observations" traceback at n = 1, nan at n = 0."""
    import numpy as np

    from adri_pipeline.jev.metrics import NotEnoughData
    from adri_pipeline.routing.verdicts import _non_inferiority

    mine, llm = [True, False][:n], [True, True][:n]
    result = _non_inferiority(
        _run("a", mine).predictions,
        _run("ollama:x", llm).predictions,
        "D1",
        RunConfig(h1_min_decisions=1),
        np.random.default_rng(1),
    )
    assert result.verdict == "inconclusive" and result.n == n
    if n < 2:
        assert result.gap_ci95_pp == NotEnoughData(n=n, reason=f"not enough data (n = {n})")
        assert result.reason == (
            "0 paired test decisions; a verdict needs at least 1"
            if n == 0
            else "the gap's interval: not enough data (n = 1)"
        )
    else:
        assert result.gap_ci95_pp[0] <= result.gap_pp <= result.gap_ci95_pp[1] and not result.reason


@pytest.mark.parametrize("n", [0, 1, 2])
def test_h2_on_fewer_than_two_decisions_says_there_is_not_enough_data(n):
    """Failed before: the same traceback at n = 1 (the helper is shared)."""
    import numpy as np

    from adri_pipeline.jev.metrics import NotEnoughData
    from adri_pipeline.routing.verdicts import _abstention

    frame = _predictions("D2", n=3)[1 : 1 + n]  # confident decisions, kept at the threshold
    h2 = _abstention(frame, RunConfig(), np.random.default_rng(1))
    if n == 0:
        assert h2.verdict == "not evaluated"
        return
    gain = h2.tasks["D2"].gain_ci95
    assert h2.verdict == "not supported"
    assert gain == NotEnoughData(n=1, reason="not enough data (n = 1)") if n == 1 else isinstance(gain, list)
    if n == 1:
        assert h2.reason == "D2: the gain's 95 % interval: not enough data (n = 1)"


def _predictions(task: str, n: int = 60, prefix: str = "t"):
    """n decisions: confident ones right, unsure ones mostly wrong (so abstaining below 0.5 helps)."""
    import polars as pl

    rows = []
    for i in range(n):
        confident = i % 3 != 0
        rows.append(
            {
                "example_id": f"{prefix}:{task}:{i}",
                "task": task,
                "answer": "sim" if i % 2 else "nao",
                "correct": confident or i % 9 == 0,
                "confidence": 0.9 if confident else 0.3,
                "threshold": 0.5,
            }
        )
    return pl.DataFrame(rows)


def test_h2_is_judged_on_every_task_with_a_confidence():
    """Failed before: H2 looked at D1 only, so a team file with only D2 was always 'not supported'."""
    import numpy as np
    import polars as pl

    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.verdicts import _abstention

    only_d2 = _abstention(_predictions("D2"), RunConfig(), np.random.default_rng(1))
    assert only_d2.verdict == "supported" and set(only_d2.tasks) == {"D2"}
    assert only_d2.tasks["D2"].coverage == pytest.approx(40 / 60) and only_d2.tasks["D2"].gain_ci95[0] > 0
    # D4 has a confidence (the set's) and a threshold chosen on calibration: H2 skipped it
    with_d4 = _abstention(
        pl.concat([_predictions("D2"), _predictions("D4", prefix="m")]), RunConfig(), np.random.default_rng(1)
    )
    assert with_d4.tasks["D4"].verdict == "supported" and with_d4.verdict == "supported"


def test_the_h2_verdict_says_which_abstention_did_better():
    import numpy as np

    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.verdicts import _abstention

    comparison = {
        "turns": 60,
        "explicit_d3": {"coverage": 0.8, "accuracy_on_kept": 0.9},
        "derived_confidence": {"coverage": 0.6, "accuracy_on_kept": 0.9},
        "no_abstention_accuracy": 0.7,
    }
    h2 = _abstention(_predictions("D2"), RunConfig(), np.random.default_rng(1), comparison)
    assert h2.d3_explicit_vs_confidence["better"] == "explicit (D3)"  # as accurate, keeps more
    comparison["derived_confidence"]["accuracy_on_kept"] = 0.95
    assert (
        _abstention(_predictions("D2"), RunConfig(), np.random.default_rng(1), comparison).d3_explicit_vs_confidence[
            "better"
        ]
        == "derived from confidence"
    )
    # failed before: a winner declared between two missing accuracies (both keep nothing)
    nothing = {
        "turns": 60,
        "explicit_d3": {"coverage": 0.0, "accuracy_on_kept": float("nan")},
        "derived_confidence": {"coverage": 0.0, "accuracy_on_kept": float("nan")},
    }
    assert (
        _abstention(_predictions("D2"), RunConfig(), np.random.default_rng(1), nothing).d3_explicit_vs_confidence[
            "better"
        ]
        == "neither (both abstain on every turn)"
    )


def test_h2_not_supported_says_why_for_each_task():
    """Failed before: "not supported" with an empty "why"."""
    import numpy as np
    import polars as pl

    from adri_pipeline.routing.verdicts import _abstention

    frame = _predictions("D1").with_columns(pl.lit(0.95).alias("threshold"))  # abstains on every decision
    h2 = _abstention(frame, RunConfig(), np.random.default_rng(1))
    assert h2.verdict == "not supported"
    assert h2.reason == "D1: keeps 0% of decisions (at least 50% needed)"


def test_a_verdict_holds_only_where_it_holds_out_of_source_too():
    from adri_pipeline.routing.verdicts import holding

    assert holding("supported", {}, "supported") == "supported"
    assert (
        holding("supported", {"sgd": "supported", "file-x": "supported"}, "supported")
        == "supported (in source and on 2 out-of-source set(s))"
    )
    assert (
        holding("supported", {"sgd": "supported", "file-x": "not supported"}, "supported")
        == "supported in source only (not on file-x)"
    )
    assert holding("not supported", {"sgd": "supported"}, "supported") == "not supported in source"


@pytest.mark.parametrize(
    "p95, verdict, says",
    [
        (41.0, "met", "p95 per turn 41.0 ms, within the 50 ms budget"),
        (132.9, "not met", "p95 per turn 132.9 ms, over the 50 ms budget"),
    ],
)
def test_h3_says_why_it_is_met_or_not(p95, verdict, says):
    """Failed before: a met or unmet H3 had an empty reason, and the routing page an empty "why"."""
    from types import SimpleNamespace

    from adri_pipeline.routing.verdicts import _performance_verdict

    performance = SimpleNamespace(independent_runs=3, shape="a shape")
    result = SimpleNamespace(
        performance=performance, latency_per_turn_ms_percentiles={"p95": p95}, cost_per_1000_usd=0.0001
    )
    h3 = _performance_verdict(result, None, RunConfig())
    assert h3.verdict == verdict and h3.reason.startswith(says)
    assert "cost per 1,000 decisions US$ 0.0001, below the compared US$ 0.01" in h3.reason
