"""Each metric against a small case computed by hand."""

import math

import pytest

from adri_pipeline.jev import metrics


def test_ece_and_mce_by_hand():
    # bins of width 0.5: [0, .5] holds conf .2 (wrong) and .4 (right): acc .5, conf .3, gap .2
    #                    (.5, 1] holds .6 (right), .8 (right), 1.0 (wrong): acc 2/3, conf .8, gap 2/15
    correct = [False, True, True, True, False]
    confidence = [0.2, 0.4, 0.6, 0.8, 1.0]
    ece, mce = metrics.ece_mce(correct, confidence, bins=2)
    assert ece == pytest.approx(2 / 5 * 0.2 + 3 / 5 * (0.8 - 2 / 3))
    assert mce == pytest.approx(0.2)


def test_aurc_by_hand():
    # sorted by confidence: right, wrong, right -> selective accuracy 1, 1/2, 2/3 -> risks 0, 1/2, 1/3
    assert metrics.aurc([True, False, True], [0.9, 0.8, 0.1]) == pytest.approx((0 + 0.5 + 1 / 3) / 3)
    coverage, accuracy = metrics.selective_curve([True, False, True], [0.9, 0.8, 0.1])
    assert coverage.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_brier_over_offered_options_by_hand():
    # (0.7-1)^2 + 0.2^2 + 0.1^2 = 0.14 ; second: gold gets 0.5 -> 0.25 + 0.25 = 0.5
    value = metrics.brier([{"a": 0.7, "b": 0.2, "c": 0.1}, {"a": 0.5, "b": 0.5}], ["a", "b"])
    assert value == pytest.approx((0.14 + 0.5) / 2)


def test_high_confidence_wrong_rate_counts_over_all_decisions():
    rate = metrics.high_confidence_wrong_rate([True, False, False, True], [0.9, 0.95, 0.5, 0.86], threshold=0.85)
    assert rate == pytest.approx(1 / 4)


def test_set_f1_by_hand():
    # {a,b} vs {a}: 2*1/(2+1) = 2/3 ; {} vs {} = 1 ; {c} vs {d} = 0
    assert metrics.set_f1([{"a", "b"}, set(), {"c"}], [{"a"}, set(), {"d"}]) == pytest.approx((2 / 3 + 1 + 0) / 3)


def test_macro_f1_averages_gold_classes():
    # class x: P 1, R .5 -> F 2/3 ; class y: P 2/3, R 1 -> F .8
    assert metrics.macro_f1(["x", "x", "y", "y"], ["x", "y", "y", "y"]) == pytest.approx((2 / 3 + 0.8) / 2)


def test_selective_at_threshold_and_cost():
    coverage, accuracy = metrics.selective_at([True, False, True, True], [0.9, 0.6, 0.7, 0.2], 0.65)
    assert (coverage, accuracy) == (0.5, 1.0)
    assert metrics.cost_per_thousand(total_seconds=36.0, decisions=1000, hourly_price=0.5) == pytest.approx(0.005)
    assert math.isnan(metrics.aurc([], []))


def test_inter_annotator_agreement_by_hand():
    # a: x x y y ; b: x y y y -> p_o = .75 ; p_e = (.5*.25 + .5*.75) = .5 ; kappa = .5
    # alpha (nominal, 2 coders, 8 values: x3 y5): D_o = 2/8 ; D_e = 2*3*5/(8*7) = 30/56 ; alpha = 1 - .25/(30/56)
    result = metrics.annotator_agreement(["x", "x", "y", "y"], ["x", "y", "y", "y"])
    assert result["agreement"] == 0.75 and result["cohen_kappa"] == pytest.approx(0.5)
    assert result["krippendorff_alpha"] == pytest.approx(1 - 0.25 / (30 / 56))
    assert metrics.krippendorff_alpha_nominal([["a", "a"], ["b", "b", None]]) == pytest.approx(1.0)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_bootstrap_of_fewer_than_two_says_so_instead_of_failing(n):
    """Failed before: scipy raised at n = 1 ("two or more observations"), and n = 0 gave nan."""
    import numpy as np

    values = np.arange(n, dtype=float)
    interval = metrics.bootstrap_interval(lambda i: values[i].mean(), n, np.random.default_rng(0))
    if n < 2:
        assert interval == metrics.NotEnoughData(n=n, reason=f"not enough data (n = {n})")
        assert metrics.interval_text(interval) == str(interval) == f"not enough data (n = {n})"
    else:
        low, high = interval
        assert 0.0 <= low <= high <= 1.0 and metrics.interval_text(interval) == f"[{low:.3f}, {high:.3f}]"


def test_a_bootstrap_whose_statistic_is_undefined_on_a_draw_says_so():
    """Nothing kept on some draws: the interval is not a pair of nan but the reason."""
    import numpy as np

    kept = np.array([True] + [False] * 9)
    interval = metrics.bootstrap_interval(lambda i: 1.0 if kept[i].any() else None, 10, np.random.default_rng(0))
    assert interval == metrics.NotEnoughData.at(10, "the statistic is undefined on some resamples")


def test_risk_at_coverage_reads_the_curve_at_the_most_confident_share():
    correct = [True, True, False, True, False]
    confidence = [0.9, 0.8, 0.7, 0.6, 0.5]
    assert metrics.risk_at_coverage(correct, confidence, 0.4) == 0.0  # the two surest: both right
    assert metrics.risk_at_coverage(correct, confidence, 0.6) == pytest.approx(1 / 3)
    assert metrics.risk_at_coverage(correct, confidence, 1.0) == pytest.approx(0.4)  # the error rate
    assert metrics.risk_at_coverage(correct, confidence, 0.01) == 0.0  # at least one decision
    assert math.isnan(metrics.risk_at_coverage([], [], 0.4))


def _draw(rng, n, sharpen):
    """n decisions over 4 options: gold drawn from p, the model reporting p sharpened (miscalibrated)."""

    options = ["a", "b", "c", "d"]
    p = rng.dirichlet([0.6] * 4, size=n)
    gold = [options[rng.choice(4, p=row)] for row in p]
    reported = p**sharpen / (p**sharpen).sum(axis=1, keepdims=True)
    return [dict(zip(options, row)) for row in reported], gold


@pytest.mark.parametrize("sharpen", [1.0, 3.0])  # calibrated, and overconfident
def test_conformal_sets_reach_their_stated_coverage_whatever_the_calibration(sharpen):
    """Simulated, written before the sets were used on any routing data: the guarantee is marginal, over
    calibration draws, so the mean coverage over 200 draws of 100 calibration decisions is >= 0.90."""
    import numpy as np

    rng = np.random.default_rng(7)
    covered = []
    for _ in range(200):
        calibration, calibration_gold = _draw(rng, 100, sharpen)
        quantile = metrics.conformal_quantile([p[g] for p, g in zip(calibration, calibration_gold)], 0.10)
        test, test_gold = _draw(rng, 50, sharpen)
        covered += [g in metrics.conformal_set(p, quantile) for p, g in zip(test, test_gold)]
    assert 0.895 <= np.mean(covered) <= 0.93  # valid, and not by answering every option


def test_too_few_calibration_decisions_put_every_option_in_the_set():
    quantile = metrics.conformal_quantile([0.9, 0.8, 0.7, 0.95, 0.6], 0.10)  # ceil(6 x 0.9) = 6 > 5
    assert quantile == math.inf
    assert metrics.conformal_set({"a": 0.97, "b": 0.02, "c": 0.01}, quantile) == ["a", "b", "c"]
    assert metrics.conformal_set({"a": 0.7, "b": 0.25, "c": 0.05}, 0.5) == ["a"]  # p >= 0.5
    assert metrics.conformal_set({"a": 0.45, "b": 0.40, "c": 0.15}, 0.65) == ["a", "b"]  # p >= 0.35


def test_the_quantile_per_group_is_the_quantile_over_groups_of_each_groups_own_by_hand():
    # group g's nine decisions each give its gold 1 - (g + 1) / 10: its own quantile (rank ceil(10 x 0.9) = 9
    # of 9) is (g + 1) / 10; over 9 groups at delta 0.10 the rank is 9 of 9, at 0.20 it is 8
    gold = [1 - (g + 1) / 10 for g in range(9) for _ in range(9)]
    group = [g for g in range(9) for _ in range(9)]
    assert metrics.conformal_quantile_per_group(gold, group, 0.10, 0.10) == pytest.approx(0.9)
    assert metrics.conformal_quantile_per_group(gold, group, 0.10, 0.20) == pytest.approx(0.8)
    assert metrics.conformal_quantile_per_group(gold[9:], group[9:], 0.10, 0.10) == math.inf  # 8 groups
    # a tenth group of 5 decisions states no quantile of its own (inf): left out, not the highest
    assert metrics.conformal_quantile_per_group(gold + [0.0] * 5, group + [9] * 5, 0.10, 0.10) == pytest.approx(0.9)


def test_sets_per_group_cover_a_new_group_where_pooled_sets_cover_only_on_average():
    """Simulated: 14 groups (authors) of 120 decisions, each as hard as its own draw (LAC scores uniform
    below a difficulty drawn uniform in [0.2, 1]), and a 15th group new. Per group, the new group's coverage
    is at least 90 % in at least 85 % of 300 draws (14/15 stated, less the error of each group's own
    quantile); pooled over decisions, in far fewer."""
    import numpy as np

    rng = np.random.default_rng(11)
    holds = {"per group": [], "pooled": []}
    for _ in range(300):
        difficulty = rng.uniform(0.2, 1.0, size=15)
        scores = [rng.uniform(0, d, size=120) for d in difficulty]
        gold = np.concatenate([1 - s for s in scores[:14]])
        group = np.repeat(np.arange(14), 120)
        quantiles = {
            "per group": metrics.conformal_quantile_per_group(gold, group, 0.10, 0.10),
            "pooled": metrics.conformal_quantile(gold, 0.10),
        }
        for rule, quantile in quantiles.items():
            holds[rule].append(np.mean(scores[14] <= quantile) >= 0.90)
    assert np.mean(holds["per group"]) >= 0.85
    assert np.mean(holds["pooled"]) <= 0.75


def test_out_of_scope_recall_and_in_scope_accuracy_on_the_accepted():
    """Larson et al.'s two figures, with a rejection threshold: below it a request is handed back."""
    from adri_pipeline.jev.metrics import out_of_scope

    gold = ["a", "a", "b", "b", "none", "none", "none", "none"]
    predicted = ["a", "b", "b", "b", "none", "a", "a", "b"]
    confidence = [0.9, 0.9, 0.9, 0.2, 0.9, 0.9, 0.3, 0.95]
    figures = out_of_scope(gold, predicted, confidence, 0.5, "none")
    assert figures["out_of_scope"] == 4 and figures["in_scope"] == 4
    assert figures["out_of_scope_recall"] == 0.5  # "none" said, and one "a" below the threshold
    assert figures["in_scope_accuracy_on_accepted"] == 2 / 3 and figures["in_scope_coverage"] == 0.75
    assert math.isnan(out_of_scope(["a"], ["a"], [1.0], 0.5, "none")["out_of_scope_recall"])


def test_a_share_over_clusters_has_its_interval_drawn_over_whole_clusters():
    import numpy as np

    rng = np.random.default_rng(0)
    few = [f"k{i}" for i in range(metrics.MIN_CLUSTERS - 1)]
    assert isinstance(metrics.clustered_share_interval([1] * len(few), few, rng), metrics.NotEnoughData)
    clusters = [f"k{i}" for i in range(8) for _ in range(3)]  # 8 clusters of 3: all hits in the first 4, none after
    hits = [1] * 12 + [0] * 12
    low, high = metrics.clustered_share_interval(hits, clusters, rng)
    assert 0.0 < low < 0.5 < high < 1.0
    low_single, high_single = metrics.bootstrap_interval(lambda drawn: np.asarray(hits)[drawn].mean(), 24, rng)
    assert high - low > high_single - low_single  # 8 clusters vary more than 24 independent decisions


def test_an_interval_over_clusters_covers_a_new_set_of_clusters_where_one_over_decisions_does_not():
    """Simulated (written before any routing figure used it): 12 clusters of 10 decisions, each cluster
    with a hit rate of its own (Beta, mean 0.9), as a 12-catalogue test set's prediction sets are. The
    percentile interval over 12 clusters still holds the mean rate 0.9 less often than the 95 % it states
    (85-89 % of draws in the first runs of this simulation), but one drawn over single decisions, which takes
    the 120 as independent, holds it about ten points less often again (76-79 %)."""
    import numpy as np

    rng = np.random.default_rng(56)
    clustered, single = [], []
    clusters = np.repeat(np.arange(12), 10)
    for _ in range(200):
        rates = rng.beta(4.5, 0.5, size=12)  # mean 0.9, clusters unlike one another
        hits = rng.random(120) < rates[clusters]
        low, high = metrics.clustered_share_interval(hits, clusters, rng)
        clustered.append(low <= 0.9 <= high)
        low, high = metrics.bootstrap_interval(lambda drawn, hits=hits: hits[drawn].mean(), 120, rng)
        single.append(low <= 0.9 <= high)
    assert np.mean(clustered) >= 0.82 and np.mean(single) <= np.mean(clustered) - 0.05
