"""The test sets a candidate was not fitted on: every other shipped source with a task it was fitted
on, and a team's `--test` files. The JEV design names the threats this answers — "Representatividade"
and "Vazamento entre partições": a verdict computed only on a split of the data a candidate was fitted
on measures how well its makers tuned it (candidates that scored 0.85–0.95 on turns written beside
their features fell to 0.24–0.54 on turns written elsewhere).

Each set keeps what it is: its name, its frozen hash, whether it is synthetic, and who wrote it (a
canonical file's `metadata.author`), so the report can say "written by the team" apart from "real"."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

from adri_pipeline.config import DATA
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.jev.examples import CanonicalExample
from adri_pipeline.routing.canonical import CanonicalFile, located_canonical
from adri_pipeline.routing.datasets import (
    BUILT_IN,
    SHARED_ROUTING,
    anonymized,
    build,
    dataset_name,
)
from adri_pipeline.routing.new_catalogues import TASK
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.splits import check_frozen

# the canonical test files the project ships: never fitted on by any dataset (test only). The team's
# earlier sets, read while tuning, are fit data now (protocol.TEAM_TRAINING)
PROJECT_TESTS = (DATA / "routing" / "heldout",)

NO_OUT_OF_SOURCE = "none"
SHIPPED = "shipped"


@dataclass
class OutsideSet:
    name: str  # datasets.dataset_name: a built-in's name, or file-<stem>
    examples: list[CanonicalExample]  # anonymized, only the tasks the candidates were fitted on
    test_hash: str
    written_by: str  # who wrote it, as its lines declare (metadata.author)
    available: int  # examples of those tasks before the per-task cap

    @property
    def origins(self) -> dict[str, str]:
        """Per task, "real", "synthetic" or "mixed" (a built-in source's D1 is real, its composed D2 not)."""
        by_task: dict[str, list[CanonicalExample]] = {}
        for example in self.examples:
            by_task.setdefault(example.task, []).append(example)
        return {task: _origin(examples) for task, examples in by_task.items()}

    def label(self, task: str) -> str:
        """The set as a report row names it: synthetic and real apart, and who wrote it."""
        return f"{self.name} ({self.origins.get(task, '?')}{', ' + self.written_by if self.written_by else ''})"


def shipped_sources(fitted_on: str) -> list[str]:
    """Every source the project ships or reads that is not `fitted_on`: the other built-in datasets
    whose data is here (../shared/data), and the project's canonical test files."""
    fitted = dataset_name(fitted_on)
    files = [str(path) for path in PROJECT_TESTS if path.exists() and dataset_name(str(path)) != fitted]
    return _other_built_ins(fitted_on) + files


def _other_built_ins(fitted_on: str) -> list[str]:
    fitted = dataset_name(fitted_on)
    return [name for name in BUILT_IN if name != fitted and (name == "sample" or SHARED_ROUTING.exists())]


def calibration_sources(
    config: RunConfig, fit_examples: list[CanonicalExample], record_dir: Path | None
) -> dict[str, list[CanonicalExample]]:
    """The calibration split of each built-in source `config.threshold_sources` names (every other one
    whose data is here when None), kept to the tasks fitted and capped per task: what D2's temperature
    also hears (run.prepare). Their test splits stay test sets; the project's files are tests only."""
    return {
        name: _capped(examples, config.out_of_source_per_task, config.seed)
        for name, examples in _other_splits(config, fit_examples, record_dir, "calibration").items()
    }


def certification_sources(
    config: RunConfig,
    fit_examples: list[CanonicalExample],
    record_dir: Path | None,
    calibration: dict[str, list[CanonicalExample]] | None = None,
) -> dict[str, list[CanonicalExample]]:
    """What the abstention threshold is also certified on (thresholds.across_sources), per other source:
    for D2, its dev split, one decision per conversation (seeded), at most
    `config.certification_per_task`; for the other tasks, its calibration split as
    `calibration_sources` gives it (`calibration`, when the caller has read it already).

    D2's catalogue changes from one deployment to the next, and its certificate is about turns of a
    catalogue never fitted on. A candidate fitted on another source never fitted on that source's dev
    split, and nothing else here reads it, so it is clean calibration data, and larger (D2, one per
    conversation: SGD 180, ha-pt 740, ha-pt-BR 782): on the calibration splits (62-100 D2 decisions) a
    source could only certify a threshold with at most one wrong answer above it, and one early error
    set the threshold for every fit. One per conversation, because the binomial test counts decisions
    as independent and the turns of one conversation are not (SGD's D2 comes four to a dialogue).
    D1, D3 and D4 stay on the calibration splits: on the dev splits the larger test certified low
    thresholds that did not hold on the sample's own test split (D4: 88 % answered, 41 % wrong) nor on
    ha-pt's (D3: 8 % wrong).

    D2 is certified only on decisions in a language the candidate was fitted in (`languages_of`): the
    certificate speaks for a new catalogue in those languages. A catalogue in another language is a
    different claim, with its own evidence: fitted on Portuguese, the candidate's most confident answers
    to SGD's English dialogues were 4 wrong of 14-15, and that alone set every Portuguese fit's D2
    threshold (0.92-0.95 against 0.71-0.87 on each Portuguese source). A team serving a catalogue in
    another language recertifies on its own turns (`adri routing calibrate --team`); the report still
    answers those sources' test splits out of source, outside the certificate."""
    fitted_d2 = [e for e in fit_examples if e.task == TASK]
    languages = languages_of(fitted_d2)
    found = dict(calibration if calibration is not None else calibration_sources(config, fit_examples, record_dir))
    dev = _other_splits(config, fitted_d2, record_dir, "dev")
    for name, examples in dev.items():
        one_each = _capped(_one_per_conversation(examples, config.seed), config.certification_per_task, config.seed)
        found[name] = [e for e in found.get(name, []) if e.task != TASK] + one_each
    kept = {
        name: [e for e in examples if e.task != TASK or base_language(e.metadata.language) in languages]
        for name, examples in found.items()
    }
    return {name: examples for name, examples in kept.items() if examples}


def base_language(language: str) -> str:
    """A language tag without its region: pt-BR and pt are one language to certify on."""
    return language.split("-")[0].lower()


def languages_of(examples: list[CanonicalExample]) -> set[str]:
    """The languages (`base_language`) of `examples`: a fit's, or a test set's."""
    return {base_language(e.metadata.language) for e in examples}


def _other_splits(
    config: RunConfig, fit_examples: list[CanonicalExample], record_dir: Path | None, split: str
) -> dict[str, list[CanonicalExample]]:
    others = _other_built_ins(config.dataset)
    chosen = others if config.threshold_sources is None else [s for s in others if s in config.threshold_sources]
    tasks = {e.task for e in fit_examples}
    found = {}
    for name in chosen:
        other = build(replace(config, dataset=name, extra_training=[]), record_dir)
        examples = [e for e in other.in_split(split) if e.task in tasks]
        if examples:
            found[name] = examples
    return found


def _one_per_conversation(examples: list[CanonicalExample], seed: int) -> list[CanonicalExample]:
    """One example of each task per conversation (group_id), drawn with a seeded generator; order kept."""
    by_conversation: dict[tuple[str, str], list[CanonicalExample]] = {}
    for example in examples:
        by_conversation.setdefault((example.group_id, example.task), []).append(example)
    rng = random.Random(seed)
    kept = {id(rng.choice(group)) for group in by_conversation.values()}
    return [e for e in examples if id(e) in kept]


def sources_for(choice: str, fitted_on: str, tests: list[str]) -> list[str]:
    """`--out-of-source`: "shipped" (every shipped source), "none", or comma-separated datasets and
    files; `tests` (`--test`) are added to whichever it is. The fit source is never among them: its
    test split is the report's "in source"."""
    chosen = (
        shipped_sources(fitted_on)
        if choice == SHIPPED
        else []
        if choice == NO_OUT_OF_SOURCE
        else [s.strip() for s in choice.split(",") if s.strip()]
    )
    fitted = dataset_name(fitted_on)
    return [s for s in dict.fromkeys(chosen + tests) if dataset_name(s) != fitted]


def _origin(examples: list[CanonicalExample]) -> str:
    kinds = {"synthetic" if e.metadata.synthetic else "real" for e in examples}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _written_by(examples: list[CanonicalExample]) -> str:
    authors = {str((e.metadata.model_extra or {}).get("author", "")) for e in examples} - {""}
    return "; ".join(sorted(authors)) if authors else ""


def _capped(examples: list[CanonicalExample], per_task: int, seed: int) -> list[CanonicalExample]:
    """At most `per_task` examples of each task, drawn uniformly (seeded) by conversation order kept:
    a large source's test split (CLINC150's thousands) must not turn a run into an hour."""
    if not per_task:
        return examples
    by_task: dict[str, list[CanonicalExample]] = {}
    for example in examples:
        by_task.setdefault(example.task, []).append(example)
    rng = random.Random(seed)
    kept = {
        id(e) for group in by_task.values() for e in (group if len(group) <= per_task else rng.sample(group, per_task))
    }
    return [e for e in examples if id(e) in kept]


def external_test(test: str | Path, config: RunConfig, record_dir: Path | None) -> CanonicalFile:
    """A test set from elsewhere: a canonical file or folder (every line test), or the test split of
    another shipped dataset (`sgd`, `ha-pt-BR`, ...: fitted on one source, measured on another; its
    examples anonymized by build and its hash frozen)."""
    if str(test) in BUILT_IN:
        # the same seeds and anonymization; its test split only, so nothing joins its dev
        other = build(replace(config, dataset=str(test), extra_training=[]), record_dir)
        return CanonicalFile(other.in_split("test"), {}, other.excluded, other.test_hash)
    if not Path(test).exists():
        raise RoutingConfigError(
            f"out-of-source test {str(test)!r}: not a built-in dataset ({', '.join(BUILT_IN)}) "
            "nor an existing canonical file or folder"
        )
    return located_canonical(Path(test))


def outside_set(
    source: str, config: RunConfig, tasks: set[str], fitted_groups: set[str], record_dir: Path | None
) -> OutsideSet | None:
    """One source as a test set (`external_test`; a file's hash frozen under its name like any test
    split), kept to `tasks`; a built-in source's test split capped per task, a file read whole (a
    team's or an outsider's hand-written turns are few and each one counts). A conversation that is
    also in the fit data is refused: that would not be out of source. None when the source holds none of
    the tasks."""
    found = external_test(source, config, record_dir)
    examples, digest = found.examples, found.frozen_hash
    if digest is None:  # a team's file: frozen here, anonymized as build does a built-in's
        digest = check_frozen(dataset_name(source), examples, record_dir)
        examples, _ = anonymized(examples, config.redact_names)
    clash = next((e for e in examples if e.group_id in fitted_groups), None)
    if clash is not None:
        raise RoutingConfigError(
            f"out-of-source test {source!r}: conversation {clash.group_id!r} is also in the "
            "data the candidates are fitted on"
        )
    examples = [e for e in examples if e.task in tasks]
    if not examples:
        return None
    kept = _capped(examples, config.out_of_source_per_task, config.seed) if source in BUILT_IN else examples
    return OutsideSet(dataset_name(source), kept, digest, _written_by(kept), len(examples))


def outside_sets(
    sources: list[str], config: RunConfig, fit_examples: list[CanonicalExample], record_dir: Path | None
) -> list[OutsideSet]:
    tasks, groups = {e.task for e in fit_examples}, {e.group_id for e in fit_examples}
    found = [outside_set(source, config, tasks, groups, record_dir) for source in sources]
    return [s for s in found if s is not None]
