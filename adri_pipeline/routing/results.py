"""The benchmark's results as types: one candidate's figures (`CandidateResult`), the design's three
hypotheses as verdicts (`Hypotheses`), and the whole run (`BenchmarkReport`), whose dump is a report
folder's metrics.json. Figures that cannot be computed (no performance run, an empty slice) are NaN
in Python and null in metrics.json (strict_json: any strict parser reads it; `Figure` reads null back
as NaN); an interval too few decisions support is jev/metrics.NotEnoughData, with its reason."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, computed_field

from adri_pipeline import strict_json
from adri_pipeline.jev.metrics import NotEnoughData
from adri_pipeline.routing.freeze import FreezeRecord
from adri_pipeline.routing.thresholds import Bound
from adri_pipeline.strict_json import Figure


class SetCost(BaseModel):
    """The JEV design, D4: "custo total, que soma as latências" (evaluation.set_cost)."""

    sets_timed: int
    reason: str = ""
    latency_per_set_ms: float | None = None
    total_latency_s: float | None = None
    cost_per_set_usd: float | None = None
    total_cost_usd: float | None = None


class CoverageAcrossCatalogues(BaseModel):
    """How far a set of catalogues' D2 set coverage can be from the stated one (evaluation.prediction_sets)."""

    catalogues: int
    interval: tuple[float, float] | NotEnoughData


class PredictionSets(BaseModel):
    """Conformal prediction sets over one task's decisions (evaluation.prediction_sets): a set of one is
    answered, a set of 2..question_max_options becomes a clarifying question naming its options (D2's
    `desambiguar`), an empty or larger set abstains."""

    stated_coverage: float  # RunConfig.set_coverage: the gold is in the set with at least this probability
    quantile: Figure  # the calibration split's conformal quantile (inf: too few decisions to promise it)
    coverage: Figure  # share of decisions whose gold is in their set
    # D2: how many catalogues the decisions come from, and the coverage's 95 % interval drawn over whole
    # catalogues (jev/metrics.clustered_share_interval): a new catalogue's turns are alike
    coverage_across_catalogues: CoverageAcrossCatalogues | None = None
    mean_size: Figure
    answered: Figure  # share with a set of one
    asked: Figure  # share turned into a clarifying question
    abstained: Figure  # share with an empty or too large a set
    answered_accuracy: Figure  # accuracy of the sets of one


class TaskFigures(BaseModel):
    """One task's quality figures (evaluation.task_figures; each metric defined in jev/metrics.py)."""

    n: int
    accuracy: Figure
    majority_baseline_accuracy: Figure
    high_confidence_wrong_rate: Figure  # at the task's abstention threshold
    high_confidence_wrong_rate_fixed: Figure  # at RunConfig.high_confidence
    ece: Figure
    mce: Figure
    aurc: Figure
    coverage_at_threshold: Figure
    selective_accuracy_at_threshold: Figure
    # the risk-coverage curve at a few coverages: "40%" -> the share wrong among the 40 % most confident
    risk_at_coverage: dict[str, Figure] = {}
    prediction_sets: PredictionSets | None = None  # single-answer tasks of a run that chose a set quantile
    reliability: list[dict]
    set_f1: float | None = None  # D4
    macro_f1: float | None = None  # every other task
    per_class: dict[str, dict[str, Figure]] | None = None
    confusion: dict | None = None
    brier: float | None = None
    set_cost: SetCost | None = None  # D4
    # D1 where the test holds out-of-scope requests (jev/metrics.out_of_scope): recall, accuracy on the accepted
    scope: dict[str, Figure | int] | None = None
    # the same per kind of out-of-scope request (evaluation.scope_by_kind)
    scope_by_kind: dict[str, dict[str, Figure | int]] | None = None

    @property
    def below_majority(self) -> bool:
        """Routes worse than always answering the most common option (the report, the docs' tables and
        the routing page flag it)."""
        return self.accuracy < self.majority_baseline_accuracy - 1e-9


class Performance(BaseModel):
    """The performance figures, each the median of the independent runs (evaluation.performance)."""

    independent_runs: int
    runs: list[dict]
    load_seconds: Figure
    warmup_seconds: Figure
    peak_rss_mb: Figure
    artifact_mb: Figure
    production_batch: int
    batch_chosen_by: str
    throughput_per_s: dict[str, Figure]
    shape: str
    hourly_usd: Figure
    price_table: str
    cost_per_1000_usd: dict[str, Figure]


class CandidateResult(BaseModel):
    candidate: str
    kind: dict
    tasks: dict[str, TaskFigures]
    by_origin: dict[str, dict[str, TaskFigures]]  # "synthetic" / "real" -> task -> figures
    slices: dict[str, dict[str, dict[str, Figure]]]  # slice -> value -> {n, accuracy}
    temperature: dict[str, Figure]
    abstention_threshold: dict[str, Figure]
    discarded_answers: int
    discarded_reasons: dict[str, int]
    error_causes: dict[str, dict]
    abstention_d3_vs_confidence: dict
    latency_ms: dict[str, Figure]
    latency_per_turn_ms_percentiles: dict[str, Figure]
    performance: Performance
    cost_per_1000_usd: Figure  # batch 1, the orchestrator's path
    fit_seconds: Figure
    freeze: FreezeRecord | None = None
    # out-of-source set -> task -> figures (routing/out_of_source.py), by the same frozen state
    out_of_source: dict[str, dict[str, TaskFigures]] = {}
    threshold_bounds: dict[str, Bound] = {}  # task -> what its abstention threshold guarantees
    drift_alarm_share: dict[str, Figure] = {}  # test set -> share of decisions the drift monitor abstained on
    # the test split's input tokens as the candidate counts them (usage.input_tokens): median, p95, max
    input_tokens: dict[str, Figure] = {}
    # the state's token limit before the model reads it: {"tokens": n or None, "counted_by": ...}
    token_limit: dict = {}

    @computed_field
    @property
    def mute_out_of_source(self) -> list[str]:
        return mute(self.out_of_source)


def mute(out_of_source: dict[str, dict[str, TaskFigures]]) -> list[str]:
    """ "set/task" where the certified threshold answered none of an out-of-source set's decisions: safe
    (nothing answered wrongly) but mute (nothing answered at all) there."""
    return [
        f"{source}/{task}"
        for source, tasks in out_of_source.items()
        for task, figures in tasks.items()
        if figures.n and figures.coverage_at_threshold == 0
    ]


class NonInferiority(BaseModel):
    verdict: str
    n: int
    gap_pp: Figure
    gap_ci95_pp: list[Figure] | NotEnoughData
    margin_pp: Figure
    min_decisions: int
    reason: str = ""


class H1(BaseModel):
    """Non-inferiority against the LLM baseline, per routing task (verdicts._non_inferiority)."""

    verdict: str
    reason: str = ""
    tasks: dict[str, NonInferiority] = {}
    in_source: str = ""  # the verdict on the run's own test split
    out_of_source: dict[str, str] = {}  # out-of-source set -> the verdict there


class SelectiveGain(BaseModel):
    verdict: str
    n: int
    coverage: Figure
    selective_accuracy: Figure
    full_coverage_accuracy: Figure
    gain_ci95: list[Figure] | NotEnoughData


class H2(BaseModel):
    """Abstention that helps, per task with a confidence (verdicts._abstention)."""

    verdict: str
    min_coverage: Figure
    reason: str = ""
    tasks: dict[str, SelectiveGain] = {}
    d3_explicit_vs_confidence: dict | None = None  # abstention_comparison, with which did better
    in_source: str = ""  # the verdict on the run's own test split
    out_of_source: dict[str, str] = {}  # out-of-source set -> the verdict there


class H3(BaseModel):
    """Latency per turn and cost per 1,000 decisions (verdicts._performance_verdict)."""

    verdict: str
    p95_per_turn_ms: Figure
    target_p95_ms: Figure
    cost_per_1000_usd: Figure
    shape: str
    compared_with_cost_per_1000_usd: Figure
    compared_with: str
    independent_runs: int
    reason: str = ""


class Hypotheses(BaseModel):
    H1: H1
    H2: H2
    H3: H3


class BenchmarkReport(BaseModel):
    """A report folder's metrics.json."""

    config: dict
    test_hash: str
    results: dict[str, CandidateResult]
    hypotheses: dict[str, Hypotheses]
    annotator_agreement: dict
    departures: list[str]
    out_of_source: list[dict] = []  # each out-of-source set: name, label, test_hash, origin, written_by, examples
    measured: dict = {}  # where and when the run ran: date, commit, cores (routing/measured.provenance)

    def write(self, path: Path) -> None:
        strict_json.write(path, self)

    @classmethod
    def read(cls, path: Path) -> "BenchmarkReport":
        return cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
