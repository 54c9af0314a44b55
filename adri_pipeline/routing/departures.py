"""What a report must say where this run departs from the JEV design's protocol."""

from __future__ import annotations

from pathlib import Path

from adri_pipeline.prices import PRICES
from adri_pipeline.routing.datasets import BUILT_IN, Dataset
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.run import CandidateRun

# when each built-in dataset's test split was last frozen anew, and why (docs/jev-benchmark.md)
REFROZEN = {
    "2026-11-30": "stratified by the design's six strata, D4 only on two-intent messages, D5 where scope is annotated",
    "2026-12-01": "every question with its decision rule; composed conversations dealt by stratum, so every "
    "split has the same shares of class, sessions and turn position",
    "2026-12-02": "regionalisms among the adversarial categories: a share of the Portuguese messages carry the "
    "other variety's word (pt-BR <-> pt-PT)",
}
# the English sources have no regionalism, and none fell in the sample's test split: theirs are those of 2026-12-01
REFROZEN_ON = dict.fromkeys(("sample", "clinc150", "sgd"), "2026-12-01") | dict.fromkeys(
    ("ha-pt-BR", "ha-pt"), "2026-12-02"
)


def departures(dataset: Dataset, config: RunConfig, runs: dict[str, CandidateRun]) -> list[str]:
    """Each place this run departs from the JEV design's protocol (§4-§6), in words a reader can weigh
    against the verdicts: stated with every report, never left for the reader to find in the code."""
    out = _training_and_hardware(dataset, config, runs)
    out += _labels(dataset)
    out += _measurement(config, runs)
    out += _test_split_and_questions(dataset, config)
    out += _thresholds_and_samples(dataset, config, runs)
    out.append(
        'Precision is each candidate\'s own, recorded as it declares it ("What each candidate ran with"), '
        "not chosen among fp32, bf16 and fp16; a server's (System One, LLM baseline) is not reported by its API."
    )
    out.append(
        f'The token limit is each candidate\'s own context ("What each candidate ran with"), not the smallest '
        f"context for all: the state is serialized to {config.max_state_chars} characters, then cut by the same "
        "policy to each candidate's limit, counted by its own tokenizer."
    )
    return out


def _training_and_hardware(dataset: Dataset, config: RunConfig, runs: dict[str, CandidateRun]) -> list[str]:
    """What the candidates learned from, beyond what the design allows, and the hardware they were
    measured on: the first things that qualify every figure after them."""
    out = []
    trained = [name for name, run in runs.items() if run.kind.trains]
    if trained:
        out.append(
            f"{', '.join(trained)} learn from the dev split (a model, or constants and margins): the design's "
            'development stage changes "nada além do operacional". The test split is never seen.'
        )
    out += _extra_training(dataset, config)
    out.append(
        "CPU only: the design's GPU scenarios (batch 1 and production batch) are not measured; the CPU "
        "production batch stands in for throughput."
    )
    return out


def _labels(dataset: Dataset) -> list[str]:
    """Where the gold labels fall short of the design's: one annotator, synthetic examples, an option no
    example measures."""
    out = []
    if not any(e.annotator_labels for e in dataset.examples):
        out.append(
            "One label per example, from its source or its composition: no two independent annotators, so "
            "no agreement (kappa / alpha) to report."
        )
    synthetic = sum(e.metadata.synthetic for e in dataset.in_split("test"))
    if synthetic:
        out.append(
            f"{synthetic} of {len(dataset.in_split('test'))} test examples are synthetic (written or composed "
            "for the benchmark, `metadata.synthetic`); the slice `origin` reports them apart."
        )
    if any(e.task == "D5" for e in dataset.examples) and not any(
        e.task == "D5" and e.gold_label == "requer_bloqueio" for e in dataset.examples
    ):
        out.append("D5: no example is annotated requer_bloqueio; the option is offered, never measured.")
    return out


def _measurement(config: RunConfig, runs: dict[str, CandidateRun]) -> list[str]:
    """How the figures were measured where the design asks otherwise: examples left out of the LLM
    baseline, what each candidate brings, fewer performance runs, unchecked prices."""
    out = []
    if config.llm_max_examples and any(run.kind.role == "llm_baseline" for run in runs.values()):
        out.append(
            f"The LLM baseline answered only the first {config.llm_max_examples} calibration and test "
            "examples of each task; H1 is paired on those."
        )
    out += _candidate_departures(config, runs)
    if config.runs < 3:
        out.append(
            f"{config.runs} independent performance run(s), where the design asks for at least three: "
            "H3 is not evaluated."
            if config.runs
            else "Quality only: no performance was measured, so no H3."
        )
    if Path(config.prices).resolve() == PRICES.resolve():
        out.append(
            "Costs use the bundled price table, whose rates were not checked against a price list: edit it "
            "(or ADRI_ROUTING_PRICES) before quoting a cost."
        )
    return out


def _test_split_and_questions(dataset: Dataset, config: RunConfig) -> list[str]:
    """A test split frozen after the candidates were developed, and questions without a decision rule:
    both weigh on how far the verdicts generalize."""
    out = []
    if config.dataset in BUILT_IN:
        when = REFROZEN_ON[config.dataset]
        out.append(
            f"This dataset's test split was frozen anew on {when} ({REFROZEN[when]}); the candidates had been "
            "developed while earlier test splits of the same sources were in use."
        )
    ruleless = sorted({e.task for e in dataset.examples if "regra" not in e.question.lower()})
    if ruleless:
        out.append(
            f'The questions of {", ".join(ruleless)} state no decision rule (no "Regra:"); the design asks '
            "for a question, options with descriptions and a rule for every task (task 21)."
        )
    return out


def _uncertified(config: RunConfig, runs: dict[str, CandidateRun]) -> list[str]:
    """The tasks some candidate abstains on entirely: no threshold certifiable, or one whose answers were
    no more often right than those withheld (thresholds.ranks)."""
    bounds = [(name, task, bound) for name, run in runs.items() for task, bound in run.threshold_bounds.items()]
    unranked = [f"{name} on {task}" for name, task, bound in bounds if bound.get("unranked")]
    uncertified = sorted({task for _, task, bound in bounds if bound["threshold"] > 1 and not bound.get("unranked")})
    out = []
    if uncertified:
        out.append(
            f"No abstention threshold could be certified on the calibration split for {', '.join(uncertified)} "
            f"(wrong answers <= {config.threshold_risk:.0%} of decisions at {1 - config.threshold_delta:.0%} "
            "needs at least 45 calibration decisions): there the candidate abstains on every decision."
        )
    if unranked:
        out.append(
            f"The threshold certified for {', '.join(unranked)} was not kept: its answers were no more often "
            "right than those it withheld, so its confidence cannot improve selective accuracy (the JEV design's "
            "H2); there the candidate abstains on every decision."
        )
    return out


def _thresholds_and_samples(dataset: Dataset, config: RunConfig, runs: dict[str, CandidateRun]) -> list[str]:
    """Abstention thresholds that could not be certified, out-of-source sets cut to a sample, and messages
    redacted before any candidate saw them."""
    out = _uncertified(config, runs)
    capped = sorted(
        {
            source
            for run in runs.values()
            for source, frame in run.outside_predictions.items()
            if frame.height and config.out_of_source_per_task and source in BUILT_IN
        }
    )
    if capped:
        out.append(
            f"Other built-in sources' test splits are drawn at most {config.out_of_source_per_task} examples "
            f"per task (seeded): {', '.join(capped)}; files are read whole."
        )
    if dataset.anonymized:
        out.append(
            f"{dataset.anonymized} example(s) carried personal data (e-mail, CPF, CNPJ, phone, or a listed "
            "name) in a message or turn: replaced by the project's "
            "redactor before any candidate saw them; the test split's hash is of the source as given."
        )
    return out


def _extra_training(dataset: Dataset, config: RunConfig) -> list[str]:
    if not dataset.extra_training:
        return []
    files = ", ".join(f"{name} ({count})" for name, count in dataset.extra_training.items())
    return [
        f"Dev also holds {sum(dataset.extra_training.values())} examples from other files ({files}; "
        "`--extra-training none` leaves them out), weighing per task "
        f"{config.extra_training_weight:g} times the source's own dev examples: "
        "by default the team's hand-written turns, synthetic, read while tuning. Calibration and test are the "
        "source's only."
    ]


def _candidate_departures(config: RunConfig, runs: dict[str, CandidateRun]) -> list[str]:
    """The departures each candidate brings: answers discarded, how an LLM's probabilities were read,
    latency over the wire."""
    out = []
    for name, run in runs.items():
        if run.discarded:
            out.append(
                f"{name}: {run.discarded} answer(s) broke the System One spec or never came, and were "
                "discarded; each such decision counts as wrong at confidence 0."
            )
        if run.kind.role == "llm_baseline" and run.kind.confidence.startswith("verbalized"):
            out.append(
                f"{name}: the LLM baseline's probabilities are {run.kind.confidence}; the design reads them "
                "from one forward pass (logits)."
            )
        elif run.kind.role == "llm_baseline":
            out.append(
                f"{name}: the LLM baseline's probabilities are the log-probabilities of each option's letter "
                "as the first answer token, renormalized over the letters; a letter outside the server's "
                "top 20 gets the most it could have had."
            )
        if run.kind.batching == "server" and run.kind.role == "candidate" and config.runs:
            out.append(
                f"{name}: latency measured over the wire, one request per decision (a D4 turn's questions in "
                "one request); per turn, the decisions of one message summed."
            )
    return out
