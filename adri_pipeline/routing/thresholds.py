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

A threshold certified on the fit source's calibration split alone held there and broke elsewhere: a
D2 candidate certified on 11 answered of 66 calibration decisions answered 10 % of hand-written turns
from catalogues it never saw wrongly (issue 42). So `across_sources` runs the same test on every
other source the project ships (out_of_source.certification_sources: for D2 their dev splits, one
decision per conversation, which a candidate fitted elsewhere never saw; for the other tasks their
calibration splits; never their test splits, never the held-out files; for D2 only the decisions in
a language the candidate was fitted in, so its bound, `Bound.languages`, speaks for catalogues in those
languages) and keeps the highest threshold any of them certifies: the share is monotone in the
threshold, so each source's own statement still holds at the higher one, each at 1 - delta (the sources are not claimed
simultaneously). A source too small to certify anything at all is named and
left out, the fit source's own included (the sample's 19 D2 calibration decisions); one that certifies
nothing because its answers are wrong makes the candidate abstain, and so does having no source able
to test.

The hand-written turns (the team's and the read outside authors'), each answered by a D2 candidate that
never fitted on its author's turns (routing/new_catalogues.py), are one more source, tested per author
(`per_group`): what they speak for is a new team's catalogue, written by one hand to one set of
conventions, so the unit they are exchangeable in is the author, not the turn: the threshold keeps a
new author's share of decisions answered wrongly at most alpha with probability at least 1 - delta.
Tested per catalogue instead (as until 2026-12-07, and still where the turns have too few authors to test,
9 at delta 0.10), a catalogue of 10 turns stays within 5 % only by answering none wrongly, so the
threshold sat above nine in ten catalogues' most confident mistake: left out one at a time, ten authors'
turns were answered 17–32 % of the time, 1.0 % of all wrongly, where the per-author rule answered 23–47 %,
2.1–2.5 % of all wrongly, one author in ten above 5 % (docs/guide-routing.md).

A threshold can pass that test by answering a handful of decisions, whatever their order: on the team's
turns the zero-shot candidate's threshold answered 4 of 293, 2 of them wrong, against 171 wrong of the
289 it withheld, and on a new author's catalogues, more of them with three options, it answered 7.5 % of
all turns wrongly. The JEV design's H2 asks of the abstention rule that it improve selective accuracy,
which such a confidence cannot do anywhere. So `across_sources` keeps its threshold only where
confidence ranks there (`ranks`): on no source that could test may the answers given be less often
right than those withheld, and over all of them together they must be shown more often right (Fisher's
exact test, one-sided, at level delta); otherwise the candidate abstains on all and the bound says why.
Each source apart, because the threshold is the highest any of them certifies and each source's
statement stands alone: pooled, a source where the candidate ranks well can hide one where it does not
(the zero-shot candidate fitted on ha-pt-BR answered 1 right of 3 of the team's turns, and 7 % of SGD's
real D2 turns wrongly). The threshold was chosen on the same decisions, which flatters its answers, so
this is a check, not a guarantee; by simulation (adri_pipeline_tests/routing/test_thresholds.py: a
confidence independent of correctness, 31 catalogues of 9 turns, 400 draws) such a confidence kept a
threshold in 7 % of draws, and was certified one in all of them before the check.

A team recertifying on its own catalogue's turns (`own_catalogue`, routing/team_calibration.py) gets the
check on those turns but not the pooled test: there the bound speaks for the catalogue its turns come
from, with nothing to carry to another, and on 60 turns, where Learn then Test answers a handful, the
test cannot show anything (on random halves of an outside author's set it dropped a logreg's threshold
in up to half of them, and the share of halves above 5 % wrong stayed the same).

MAPIE's risk controllers (mapie.risk_control) run Learn then Test over a scikit-learn classifier's
predict_proba; a candidate here is a System One answer's confidence, not an estimator, and the test
is one binomial tail per threshold, so scipy's distribution is used directly."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel
from scipy.stats import binom, fisher_exact

ABSTAIN_ALL = 1.01  # no confidence reaches it


class SourceCheck(BaseModel):
    """Another source's decisions at the chosen threshold (`across_sources`)."""

    source: str
    n: int
    answered: int
    wrong: int
    alone: float | None  # the threshold this source certifies by itself; None: too few decisions to test
    groups: int | None = None  # tested per group (`per_group`): how many it holds
    unit: str | None = None  # what a group is: an author's turns, or a catalogue's

    def statement(self) -> str:
        unit = f"{self.groups} {self.unit}s" if self.groups is not None else str(self.n)
        if self.alone is None:
            return f"{self.source}: too few to test ({unit})"
        per = f", each of {self.groups} {self.unit}s tested" if self.groups is not None else ""
        return f"{self.source}: {self.wrong} wrong of {self.answered} answered of {self.n}{per}"


class Bound(BaseModel):
    """What a task's threshold guarantees, and what calibration showed at it."""

    threshold: float
    alpha: float  # the bound on the share of decisions answered wrongly
    delta: float  # the bound holds with probability >= 1 - delta
    calibration_n: int
    calibration_answered: int
    calibration_wrong: int  # answered wrongly at the threshold
    assumption: str = "test decisions exchangeable with the calibration split's"
    sources: list[SourceCheck] = []  # the other sources (and the hand-written turns) it was also tested on
    # D2: the languages of the catalogues it speaks for (out_of_source.languages_of); [] = any
    languages: list[str] = []
    # why the threshold certified was not kept (`ranks`); None: kept, or nothing was certified
    unranked: str | None = None

    def statement(self) -> str:
        others = "; ".join(check.statement() for check in self.sources)
        others = f"; other sources: {others}" if others else ""
        if self.languages:
            others += (
                f"; for catalogues in {', '.join(self.languages)}, the languages it was fitted in (decisions in "
                "other languages were not certified on)"
            )
        if self.threshold > 1 and self.unranked is not None:
            return (
                f"none kept: {self.unranked}; a confidence that does not rank cannot improve selective accuracy "
                f"(JEV design H2), so it abstains on all{others}"
            )
        if self.threshold > 1 and not _testable(self.calibration_n, self.alpha, self.delta):
            return (
                f"none certifiable: {self.calibration_n} calibration decisions cannot show wrong answers "
                f"<= {self.alpha:.0%} of decisions at {1 - self.delta:.0%} confidence, so it abstains on all{others}"
            )
        if self.threshold > 1:
            return (
                f"none certifiable: no threshold keeps wrong answers <= {self.alpha:.0%} of decisions at "
                f"{1 - self.delta:.0%} confidence on the calibration split ({self.calibration_n} decisions)"
                f"{' and every other source' if self.sources else ''}, so it abstains on all{others}"
            )
        return (
            f"answered wrongly <= {self.alpha:.0%} of decisions with probability >= {1 - self.delta:.0%} "
            f"(threshold {self.threshold:.3f}; calibration: {self.calibration_wrong} wrong of "
            f"{self.calibration_answered} answered of {self.calibration_n}{others})"
        )


def _testable(n: int, alpha: float, delta: float) -> bool:
    """Whether n decisions can certify any threshold: even no wrong answer at all must reject the null."""
    return bool(n) and binom.cdf(0, n, alpha) <= delta


def learn_then_test(correct, confidence, alpha: float, delta: float) -> Bound:
    """The lowest threshold certified by fixed-sequence binomial tests (module docstring)."""
    correct = np.asarray(correct, bool)
    confidence = np.asarray(confidence, float)
    n = len(correct)
    chosen, answered, wrong = ABSTAIN_ALL, 0, 0
    if _testable(n, alpha, delta):
        for threshold in np.unique(confidence)[::-1]:
            given = confidence >= threshold
            errors = int((given & ~correct).sum())
            if binom.cdf(errors, n, alpha) > delta:  # p-value of "share > alpha": not rejected, stop
                break
            chosen, answered, wrong = float(threshold), int(given.sum()), errors
    return Bound(
        threshold=chosen,
        alpha=alpha,
        delta=delta,
        calibration_n=n,
        calibration_answered=answered,
        calibration_wrong=wrong,
    )


def fewest_groups(delta: float) -> int:
    """The fewest groups `per_group` can test at delta: the smallest G with ceil((1 - delta)(G + 1)) <= G."""
    return int(np.ceil(round((1 - delta) / delta, 9)))


def per_group(correct, confidence, group, alpha: float, delta: float) -> float | None:
    """The threshold a source of whole groups (an author's turns, or a catalogue's) certifies for one new
    group: with probability at least 1 - delta, the share of a new group's decisions answered wrongly is
    at most alpha, provided groups are exchangeable (not their decisions: the turns of one group are alike,
    and counted one by one the binomial test overstated what 293 turns in 31 catalogues show — it certified
    a zero-shot threshold where 9 of 13 answered were wrong). Each group's share answered wrongly only falls
    as the threshold rises, so each has a lowest safe threshold; the result is the k-th smallest of them,
    k = ceil((1 - delta)(G + 1)) of G groups, a split-conformal quantile: a new group's own lowest safe
    threshold is at or below it with probability >= k / (G + 1). None when G is too small (k > G: fewer
    than `fewest_groups`, 9 at delta 0.10)."""
    correct, confidence, group = (np.asarray(a) for a in (correct, confidence, group))
    names = np.unique(group)
    rank = int(np.ceil((1 - delta) * (len(names) + 1)))
    if rank > len(names):
        return None
    grid = np.append(np.unique(confidence), ABSTAIN_ALL)
    safe = []
    for name in names:
        mine = group == name
        wrong_at = ((confidence[mine & ~correct][:, None] >= grid[None, :]).sum(axis=0)) / mine.sum()
        safe.append(float(grid[np.argmax(wrong_at <= alpha)]))  # lowest grid threshold within alpha
    return sorted(safe)[rank - 1]


def ranks(threshold: float, correct, confidence) -> float:
    """The p-value of "the answers given at `threshold` are no more often right than those withheld":
    Fisher's exact test, one-sided (module docstring). 0 when nothing is withheld: no order is claimed."""
    correct, given = np.asarray(correct, bool), np.asarray(confidence, float) >= threshold
    if given.all():
        return 0.0
    table = [[(given & correct).sum(), (given & ~correct).sum()], [(~given & correct).sum(), (~given & ~correct).sum()]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def _ranked(threshold: float, tested: dict[str, tuple], delta: float, own_catalogue: bool) -> tuple[float, str | None]:
    """The threshold kept where confidence ranks (`ranks`: on each of the `tested` sources apart, source ->
    (correct, confidence), and, unless `own_catalogue`, over them pooled), else ABSTAIN_ALL and why."""
    if threshold >= ABSTAIN_ALL:
        return threshold, None
    at = f"at the threshold certified ({threshold:.3f})"
    for source, (correct, confidence) in tested.items():
        correct, given = np.asarray(correct, bool), np.asarray(confidence, float) >= threshold
        if given.any() and not given.all() and correct[given].mean() < correct[~given].mean():
            return ABSTAIN_ALL, (
                f"{at} its answers on {source} were less often right ({correct[given].sum()} of {given.sum()}) "
                f"than those it withheld ({correct[~given].sum()} of {(~given).sum()})"
            )
    if own_catalogue:
        return threshold, None
    pooled = [np.concatenate([np.asarray(t[i]) for t in tested.values()]) for i in (0, 1)]
    p_value = ranks(threshold, *pooled)
    if p_value > delta:
        return ABSTAIN_ALL, (
            f"{at} its answers were not shown more often right than those it withheld, over every source that "
            f"could test (Fisher's exact test p = {p_value:.2f} > {delta:g})"
        )
    return threshold, None


def _at(threshold: float, correct: np.ndarray, confidence: np.ndarray) -> tuple[int, int]:
    given = confidence >= threshold
    return int(given.sum()), int((given & ~correct).sum())


def across_sources(
    correct, confidence, others: dict[str, tuple], alpha: float, delta: float, own_catalogue: bool = False
) -> Bound:
    """The fit source's Learn then Test threshold, raised to the highest any other source
    certifies (`others`: source -> (correct, confidence), or (correct, confidence, group, unit) for a
    source tested per group, `per_group`); each source's figures at the result (module docstring)."""
    own = learn_then_test(correct, confidence, alpha, delta)
    # the fit source's calibration split, like every other, states nothing when too small to test
    testable_sources = int(_testable(len(correct), alpha, delta))
    checks, threshold = [], own.threshold if testable_sources else -np.inf
    tested = {"the calibration split": (correct, confidence)} if testable_sources else {}  # what `ranks` reads
    for source, (their_correct, their_confidence, *grouped) in others.items():
        if grouped:
            alone = per_group(their_correct, their_confidence, grouped[0], alpha, delta)
        else:
            testable = _testable(len(their_correct), alpha, delta)
            alone = learn_then_test(their_correct, their_confidence, alpha, delta).threshold if testable else None
        threshold = max(threshold, alone) if alone is not None else threshold
        testable_sources += int(alone is not None)
        tested |= {source: (their_correct, their_confidence)} if alone is not None else {}
        per_unit = {"groups": len(set(grouped[0])), "unit": (grouped[1:] or ["catalogue"])[0]} if grouped else {}
        checks.append((source, np.asarray(their_correct, bool), np.asarray(their_confidence, float), alone, per_unit))
    threshold, unranked = _ranked(threshold if testable_sources else ABSTAIN_ALL, tested, delta, own_catalogue)
    answered, wrong = _at(threshold, np.asarray(correct, bool), np.asarray(confidence, float))
    return own.model_copy(
        update={
            "threshold": threshold,
            "unranked": unranked,
            "calibration_answered": answered,
            "calibration_wrong": wrong,
            "sources": [
                SourceCheck(
                    source=source,
                    n=len(c),
                    **dict(zip(("answered", "wrong"), _at(threshold, c, p))),
                    alone=alone,
                    **per_unit,
                )
                for source, c, p, alone, per_unit in checks
            ],
        }
    )
