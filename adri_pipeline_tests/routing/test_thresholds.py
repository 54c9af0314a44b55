"""The abstention threshold's guarantee (routing/thresholds.py), checked where the truth is known."""

import numpy as np
from scipy.stats import binom

from adri_pipeline.routing.thresholds import ABSTAIN_ALL, across_sources, learn_then_test


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


def test_another_sources_calibration_raises_the_threshold_to_what_it_certifies():
    """Issue 42: a threshold certified on 11 answered of 66 calibration decisions, none wrong, let 10 %
    of a new catalogue's turns through wrong. Another source whose confident answers are wrong moves
    it up; each source's figures are reported at the threshold chosen."""
    own_correct, own_confidence = np.ones(66, bool), np.linspace(0.2, 0.4, 66)
    own_correct[:55] = False  # only the 11 most confident are right: certified at their lowest
    alone = learn_then_test(own_correct, own_confidence, alpha=0.05, delta=0.10)
    assert alone.calibration_answered == 11 and alone.calibration_wrong == 0
    their_confidence = np.linspace(0.2, 0.4, 234)
    their_correct = their_confidence > 0.39  # wrong up to 0.39
    bound = across_sources(
        own_correct, own_confidence, {"sgd": (their_correct, their_confidence)}, alpha=0.05, delta=0.10
    )
    [check] = bound.sources
    assert bound.threshold == check.alone > alone.threshold
    assert (
        check.source == "sgd"
        and check.wrong <= 0.05 * 234
        and check.answered == (their_confidence >= bound.threshold).sum()
    )
    assert bound.calibration_answered < alone.calibration_answered and "sgd: " in bound.statement()


def test_a_source_too_small_to_test_is_named_and_left_out():
    confidence = np.linspace(0.5, 1, 100)
    bound = across_sources(
        np.ones(100, bool), confidence, {"sample": (np.zeros(19, bool), np.full(19, 0.99))}, alpha=0.05, delta=0.10
    )
    assert bound.threshold == 0.5 and bound.sources[0].alone is None
    assert "sample: too few to test (19)" in bound.statement() and "languages" not in bound.statement()
    portuguese = bound.model_copy(update={"languages": ["pt"]}).statement()
    assert "for catalogues in pt, the languages it was fitted in" in portuguese
    wrong_everywhere = across_sources(
        np.ones(100, bool), confidence, {"sgd": (np.zeros(100, bool), np.full(100, 0.99))}, alpha=0.05, delta=0.10
    )
    assert wrong_everywhere.threshold == ABSTAIN_ALL and "abstains on all" in wrong_everywhere.statement()


def test_a_fit_source_too_small_to_test_leaves_the_threshold_to_the_sources_that_can():
    """The sample's 19 D2 calibration decisions can certify nothing: they used to make every D2 turn
    abstain whatever the other sources (or the team's turns of unseen catalogues) certified."""
    confidence = np.linspace(0.5, 1, 100)
    bound = across_sources(
        np.ones(19, bool),
        np.full(19, 0.9),
        {"new catalogues": (np.ones(100, bool), confidence)},
        alpha=0.05,
        delta=0.10,
    )
    assert bound.threshold == 0.5 and bound.sources[0].answered == 100
    nobody = across_sources(
        np.ones(19, bool), np.full(19, 0.9), {"sample": (np.ones(19, bool), np.full(19, 0.9))}, alpha=0.05, delta=0.10
    )
    assert nobody.threshold == ABSTAIN_ALL and "abstains on all" in nobody.statement()


def _catalogue_draw(rng, size: int = 9):
    """One catalogue: its own difficulty (alike turns), confidence uniform, right with probability
    confidence minus that difficulty."""
    difficulty = rng.uniform(0, 0.3)
    confidence = rng.uniform(0, 1, size)
    return rng.uniform(0, 1, size) < confidence - difficulty, confidence


def test_a_threshold_tested_per_group_holds_for_a_new_catalogue_in_at_least_one_minus_delta_of_draws():
    from adri_pipeline.routing.thresholds import per_group

    rng = np.random.default_rng(3)
    alpha, delta, violations, answered = 0.05, 0.10, 0, []
    for _ in range(400):
        drawn = [_catalogue_draw(rng) for _ in range(31)]
        correct = np.concatenate([c for c, _ in drawn])
        confidence = np.concatenate([p for _, p in drawn])
        catalogue = np.repeat(np.arange(31), 9)
        threshold = per_group(correct, confidence, catalogue, alpha, delta)
        new_correct, new_confidence = _catalogue_draw(rng)
        violations += ((new_confidence >= threshold) & ~new_correct).mean() > alpha
        answered.append((confidence >= threshold).mean())
    assert violations / 400 <= delta
    assert np.median(answered) > 0.05  # it answers something: not a threshold of 1 dressed as a guarantee


def test_turns_counted_one_by_one_certify_what_their_catalogues_do_not():
    """The zero-shot case (2026-12-06): 13 answered of 293, 9 of them wrong, in 9 different catalogues:
    3.1 % of all decisions passes the binomial test, but 9 of 31 new catalogues would be answered wrongly
    on more than 5 % of their turns."""
    from adri_pipeline.routing.thresholds import per_group

    catalogue = np.arange(293) % 31
    confidence = np.linspace(0.01, 0.3, 293)
    confidence[-13:] = np.linspace(0.38, 0.6, 13)
    correct = np.ones(293, bool)
    correct[-13:-4] = False  # 9 confident mistakes, each in its own catalogue
    assert learn_then_test(correct, confidence, 0.05, 0.10).threshold <= 0.38
    # 29 = ceil(0.9 * 32) of 31 catalogues must be within 5 %: at most 2 answered wrongly
    threshold = per_group(correct, confidence, catalogue, 0.05, 0.10)
    assert ((confidence >= threshold) & ~correct).sum() == 2
    bound = across_sources(np.ones(19, bool), np.full(19, 0.5), {"team": (correct, confidence, catalogue)}, 0.05, 0.10)
    assert f"({threshold:.3f})" in bound.unranked and "each of 31 catalogues tested" in bound.statement()
    # its answers (2 wrong of 6) are more often wrong than those it withholds (7 of 287): not kept (`ranks`)
    assert bound.threshold == ABSTAIN_ALL
    assert per_group(correct[:8], confidence[:8], np.arange(8), 0.05, 0.10) is None  # 8 catalogues test nothing


def _unranked_catalogue_draw(rng, size: int = 9):
    """One catalogue of a candidate whose confidence does not rank: confidence uniform and independent of
    whether the answer is right; right 41 % of the time (the zero-shot candidate on the team's turns)."""
    return rng.uniform(0, 1, size) < 0.41, rng.uniform(0, 1, size)


def test_a_confidence_that_does_not_rank_keeps_no_threshold_in_at_least_one_minus_delta_of_draws():
    """JEV design H2: abstention must improve selective accuracy. Written before any routing figure was
    read for it: a confidence independent of correctness, 31 catalogues of 9 turns, 400 draws."""
    rng = np.random.default_rng(56)
    kept = []
    for _ in range(400):
        drawn = [_unranked_catalogue_draw(rng) for _ in range(31)]
        correct = np.concatenate([c for c, _ in drawn])
        confidence = np.concatenate([p for _, p in drawn])
        catalogue = np.repeat(np.arange(31), 9)
        bound = across_sources(
            np.ones(19, bool), np.full(19, 0.5), {"team": (correct, confidence, catalogue)}, 0.05, 0.10
        )
        kept.append(bound.threshold < ABSTAIN_ALL)
    assert np.mean(kept) <= 0.10


def test_a_confidence_that_ranks_keeps_its_threshold():
    """The guard mutes nothing that ranks: a calibrated model keeps the Learn then Test threshold, and so
    does a model right on nearly everything whose threshold answers every decision (nothing withheld)."""
    rng = np.random.default_rng(57)
    for _ in range(50):
        correct, confidence = _calibrated_draw(rng, 300)
        alone = learn_then_test(correct, confidence, 0.05, 0.10)
        assert across_sources(correct, confidence, {}, 0.05, 0.10).threshold == alone.threshold
    nearly_all_right = np.arange(300) % 50 != 0  # 2 % wrong, spread over the ranking
    confidence = np.linspace(0.9, 1, 300)
    bound = across_sources(nearly_all_right, confidence, {}, 0.05, 0.10)
    assert bound.threshold == 0.9 and bound.calibration_answered == 300


def test_a_threshold_whose_answers_are_no_more_often_right_than_those_withheld_abstains_and_says_why():
    """The zero-shot candidate fitted on the sample (2026-12-07): its threshold, certified per catalogue on
    the team's turns, answered 4 of 293, 2 of them wrong, against 171 wrong of the 289 it withheld; on a
    new catalogue with more three-option turns it answered 7.5 % of all turns wrongly. Here the same
    counts, the answered in 4 catalogues of 31."""
    catalogue = np.arange(293) % 31
    confidence = np.linspace(0.01, 0.3, 293)
    confidence[-4:] = [0.39, 0.40, 0.41, 0.42]
    correct = np.zeros(293, bool)
    correct[:118] = True  # 118 right of the 289 withheld
    correct[-4:] = [True, False, True, False]
    bound = across_sources(np.ones(19, bool), np.full(19, 0.5), {"team": (correct, confidence, catalogue)}, 0.05, 0.10)
    assert bound.threshold == ABSTAIN_ALL
    assert "not shown more often right than those it withheld" in bound.statement()
    assert "abstains on all" in bound.statement()


def test_a_source_whose_answers_are_less_often_right_than_those_withheld_is_not_hidden_by_the_others():
    """The zero-shot candidate fitted on ha-pt-BR (2026-12-07): over all its sources its answers ranked, but
    on the team's turns of unseen catalogues, which set its threshold, 1 of the 3 it answered was right."""
    own_confidence = np.linspace(0, 1, 740)
    own_correct = own_confidence > 0.3  # ranks perfectly in source
    catalogue = np.arange(293) % 31
    team_confidence = np.linspace(0.01, 0.3, 293)
    team_confidence[-3:] = [0.49, 0.50, 0.51]
    team_correct = np.zeros(293, bool)
    team_correct[:120] = True  # 120 right of the 290 withheld
    team_correct[-3:] = [True, False, False]
    bound = across_sources(own_correct, own_confidence, {"team": (team_correct, team_confidence, catalogue)}, 0.05, 0.1)
    assert bound.threshold == ABSTAIN_ALL
    assert "its answers on team were less often right (1 of 3) than those it withheld (120 of 290)" in bound.statement()


def test_on_a_teams_own_catalogue_a_few_right_answers_keep_the_threshold_and_worse_answers_do_not():
    """60 turns of one catalogue: Learn then Test certifies the threshold at which 3 are answered, all
    right. Pooled, 3 of 3 against 34 of 57 cannot be shown better, and a logreg lost its team threshold
    in up to half of an outside author's 60-turn halves; on its own catalogue only the per-source check
    applies. Answers less often right than those withheld still drop it (200 turns, half the 8 most
    confident wrong against 30 % of the rest)."""
    confidence = np.linspace(0.1, 0.6, 60)
    confidence[-3:] = [0.9, 0.91, 0.92]
    correct = np.arange(60) % 5 < 3  # 60 % right below
    correct[-5:] = [False, False, True, True, True]
    assert across_sources(correct, confidence, {}, 0.05, 0.10).threshold == ABSTAIN_ALL
    team = across_sources(correct, confidence, {}, 0.05, 0.10, own_catalogue=True)
    assert team.threshold == 0.9 and team.unranked is None
    confidence = np.linspace(0.1, 0.6, 200)
    confidence[-8:] = np.linspace(0.9, 0.97, 8)
    correct = np.arange(200) % 10 < 7  # 70 % right below
    correct[-8:] = [True, False] * 4
    worse = across_sources(correct, confidence, {}, 0.05, 0.10, own_catalogue=True)
    alone = learn_then_test(correct, confidence, 0.05, 0.10)
    assert alone.threshold < 0.9 and alone.calibration_wrong / alone.calibration_answered > 0.3
    assert worse.threshold == ABSTAIN_ALL and "less often right" in worse.statement()


def _author_draw(rng, catalogues: int = 12, size: int = 10):
    """One author's turns: an author's conventions make all its catalogues harder or easier alike (up to
    0.3 off the confidence), each catalogue a little more (up to 0.1)."""
    author = rng.uniform(0, 0.3)
    difficulty = np.repeat(author + rng.uniform(0, 0.1, catalogues), size)
    confidence = rng.uniform(0, 1, catalogues * size)
    return rng.uniform(0, 1, catalogues * size) < confidence - difficulty, confidence


def test_a_threshold_tested_per_author_holds_for_a_new_author_and_answers_more_than_per_catalogue():
    """Ten authors of twelve 10-turn catalogues each (the fit data's shape): tested per author, a new author's
    share answered wrongly stays within alpha in at least 1 - delta of draws; tested per catalogue, a
    catalogue stays within 5 % only by answering none wrongly, and the threshold answers less."""
    from adri_pipeline.routing.thresholds import fewest_groups, per_group

    rng = np.random.default_rng(7)
    alpha, delta, violations, by_author, by_catalogue = 0.05, 0.10, 0, [], []
    for _ in range(300):
        drawn = [_author_draw(rng) for _ in range(10)]
        correct = np.concatenate([c for c, _ in drawn])
        confidence = np.concatenate([p for _, p in drawn])
        author, catalogue = np.repeat(np.arange(10), 120), np.repeat(np.arange(120), 10)
        threshold = per_group(correct, confidence, author, alpha, delta)
        new_correct, new_confidence = _author_draw(rng)
        violations += ((new_confidence >= threshold) & ~new_correct).mean() > alpha
        by_author.append((new_confidence >= threshold).mean())
        by_catalogue.append((new_confidence >= per_group(correct, confidence, catalogue, alpha, delta)).mean())
    # the guarantee is 1 - k / (G + 1) = 1/11 of draws; 300 draws exceed binom's 99th percentile 1 % of the time
    assert violations <= binom.ppf(0.99, 300, 1 / 11)
    assert np.median(by_author) > 1.3 * np.median(by_catalogue) > 0
    assert fewest_groups(0.10) == 9 and per_group(correct[:1080], confidence[:1080], author[:1080], 0.05, 0.10)
    assert per_group(correct[:960], confidence[:960], author[:960], 0.05, 0.10) is None  # 8 authors test nothing
