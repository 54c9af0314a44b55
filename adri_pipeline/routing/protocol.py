"""The protocol's parameters of one benchmark run (the JEV design's targets, margins and
repetitions), recorded with every result."""

from __future__ import annotations

from dataclasses import dataclass, field

from adri_pipeline.config import DATA
from adri_pipeline.jev.serialize import MAX_STATE_CHARS, SERIALIZER_VERSION
from adri_pipeline.prices import PRICES

# The hand-written D2 turns every fit learns from (pt-BR, synthetic): the team's sets (35 catalogues), the
# outside authors' sealed sets opened once each (ten authors, 120 catalogues) and three outside authors'
# sets written as fit data (data/routing/outside_authors/, 36 catalogues). Each sealed set was written
# before a change and run on once, then its errors were read, so none is an independent test any more.
# What they all are is conversations over catalogues no built-in source has, written by fourteen hands with
# fourteen sets of conventions, so every fit learns from them (RunConfig.extra_training); a new author's
# turns were what D2 failed on. data/routing/heldout/ and the unopened sealed sets are not here.
ENGINEERS_FILES = tuple(
    str(DATA / "routing" / name)
    for name in (
        "handwritten_d2.jsonl",
        "team_d2_2026-12-02.jsonl",
        "team_d2_2026-12-03.jsonl",
        "team_d2_2026-12-04.jsonl",
    )
)
TEAM_TRAINING = ENGINEERS_FILES + tuple(
    str(DATA / "routing" / name)
    for name in (
        "sealed/outsider_d2_2026-12-04c.jsonl",
        "sealed/sealed_d2_2026-12-06.jsonl",
        "sealed/sealed_d2_2026-12-06b.jsonl",
        "sealed/sealed_d2_2026-12-07.jsonl",
        "sealed/sealed_d2_2026-12-07b.jsonl",
        "sealed/sealed_d2_2026-12-07c.jsonl",
        "sealed/sealed_d2_2026-12-07d.jsonl",
        "sealed/sealed_d2_2026-12-07e.jsonl",
        "sealed/sealed_d2_2026-12-07i.jsonl",
        "sealed/sealed_d2_2026-12-07q.jsonl",
        "outside_authors/outsider_d2_2026-12-07f.jsonl",
        "outside_authors/outsider_d2_2026-12-07g.jsonl",
        "outside_authors/outsider_d2_2026-12-07h.jsonl",
    )
)
# Who wrote which of them: each file is one author's, but the project's engineer wrote four. D2's
# confidence is cross-fitted and certified by author (routing/new_catalogues.py): a new team writes its own
# catalogue by its own conventions, and a turn answered by a fit that learned its author's other catalogues
# looked surer than a new author's turns bear out (leave one author out, docs/guide-routing.md).
ENGINEER = "the project's engineer"
TEAM_AUTHORS = {path: ENGINEER for path in ENGINEERS_FILES}


@dataclass
class RunConfig:
    """Recorded with every result."""

    dataset: str = "sample"  # as config.Settings.routing_dataset
    seed: int = 13
    split_seed: int = 7
    # independent performance runs, each its own process (the JEV design: at least three); 0 = quality only
    runs: int = 3
    warmup: int = 5  # decisions on dev examples before anything is timed, in each run
    # candidate -> production batch, as `adri routing pilot` chose it (pilot.json); a candidate not
    # here gets its pilot run by the benchmark itself
    production_batch: dict[str, int] = field(default_factory=dict)
    production_batch_by: str = "adri routing pilot"  # who chose production_batch: the pilot's record or --batch
    # one truncation for every candidate (the JEV design: "Todos usam a mesma política"): the state
    # serialized to at most this many characters; each candidate's input tokens are counted as it
    # reports them (CandidateResult.input_tokens), and its precision is its kind's
    max_state_chars: int = MAX_STATE_CHARS
    serializer: str = SERIALIZER_VERSION
    prices: str = str(PRICES)  # hourly price per machine shape and the shape each candidate ran on
    # the abstention threshold (routing/thresholds.py): decisions answered wrongly at most threshold_risk
    # of all, with probability at least 1 - threshold_delta over calibration draws
    threshold_risk: float = 0.05
    threshold_delta: float = 0.10
    # the built-in sources whose calibration splits also certify the threshold (thresholds.across_sources):
    # None, every other one whose data is here; [], the fit source alone. From Settings, the built-in
    # sources `--out-of-source` chose (service.config_for)
    threshold_sources: list[str] | None = None
    # canonical files whose examples join the dev split (never calibration, never test), for the tasks the
    # source itself has; together they weigh extra_training_weight times the source's own dev examples of the
    # task (datasets.with_extra_training)
    extra_training: list[str] = field(default_factory=lambda: list(TEAM_TRAINING))
    # 3: left out one author at a time on the 14 authors' turns, a new author's D2 answers were more often
    # right and better ranked than at 1 (as much as the source's), and no better at 10 (docs/guide-routing.md)
    extra_training_weight: float = 3.0
    # extra_training file -> its author, where one author wrote several; any other file is its own author
    authors: dict[str, str] = field(default_factory=lambda: dict(TEAM_AUTHORS))
    # D2's confidence, threshold and prediction sets fitted on the hand-written turns (extra_training) answered by
    # candidates fitted without their author's turns, in this many folds by author (by catalogue with fewer
    # authors than folds: routing/new_catalogues.py); 0: on the source's calibration split, blended by familiarity
    new_catalogue_folds: int = 5
    # examples per task of each other built-in source's test split, drawn uniformly (seeded); 0 = all.
    # A file (--test, data/routing/heldout) is read whole
    out_of_source_per_task: int = 100
    # D2 decisions of each other source's dev split D2's threshold is certified on, one per
    # conversation (out_of_source.certification_sources); 0 = every conversation
    certification_per_task: int = 800
    # names the anonymization removes besides the ones it detects (Settings.routing_redact_names)
    redact_names: list[str] = field(default_factory=list)
    high_confidence: float = 0.85
    # conformal prediction sets (evaluation.prediction_sets): the gold is in a decision's set with at least
    # this probability; a set of 2..question_max_options options becomes a clarifying question naming them
    set_coverage: float = 0.90
    question_max_options: int = 3
    ece_bins: int = 10
    h1_margin_pp: float = 3.0
    h2_min_coverage: float = 0.5  # abstaining on more than half the decisions does not count as helping
    h3_p95_ms: float = 50.0
    h3_cost_per_1000_usd: float = 0.01
    # an LLM baseline answers the first N calibration and test examples of each task (0 = all); H1 is
    # then paired on those N test examples
    llm_max_examples: int = 0
    # H1 gives a verdict only on at least this many paired test decisions per task (h1_min_decisions)
    h1_min_decisions: int = 0  # 0: derived from the margin (see h1_min_decisions)
