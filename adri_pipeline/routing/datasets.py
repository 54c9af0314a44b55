"""The benchmark's examples and frozen splits: the built-in sources (the sample, Home Assistant
intents, CLINC150, SGD dialogues), a team's canonical file, or a dataset fitted on and tested on
another's examples."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from adri_pipeline.config import DATA, SHARED_DATA
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.jev.examples import CanonicalExample
from adri_pipeline.routing.canonical import CanonicalFile, located_canonical
from adri_pipeline.routing.composition import build_dataset
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.sources import (
    clinc_descriptions,
    load_clinc_utterances,
    load_ha_descriptions,
    load_ha_utterances,
    load_sgd,
)
from adri_pipeline.routing.splits import assign_splits, check_frozen, leaking_groups, split_hash

SHARED_ROUTING = SHARED_DATA / "routing"
BUILT_IN = ("sample", "ha-pt-BR", "ha-pt", "clinc150", "sgd")
# leave intents out: a built-in source with a seeded share of its intents never fitted on, whose
# utterances join the test split as out of scope (composition.build_dataset's `unseen_share`); not measured
# out of source by other runs (the same utterances as its source)
UNSEEN_INTENTS = {f"{source}-unseen-intents": source for source in ("sample", "ha-pt-BR", "ha-pt", "clinc150")}
UNSEEN_SHARE = 0.2
SAMPLE_ROUTING = DATA / "routing"


@dataclass
class Dataset:
    examples: list[CanonicalExample]
    split_of: dict[str, str]
    test_hash: str
    # (where, example): annotators disagree and nobody adjudicated (CanonicalFile.excluded)
    excluded: list[tuple[str, CanonicalExample]] = field(default_factory=list)
    anonymized: int = 0  # examples whose message or turns carried personal data, replaced (`anonymized`)
    # what the test split is, as reports name it: the dataset's own ("in source"), or an external file
    test_set: str = "in source"
    # example id -> its weight in the fit, for examples that joined dev from RunConfig.extra_training
    # (absent: 1); and per file, how many of its examples joined
    fit_weight: dict[str, float] = field(default_factory=dict)
    extra_training: dict[str, int] = field(default_factory=dict)
    # example id -> who wrote it, for the same examples (RunConfig.authors; a file not named there is its own)
    author_of: dict[str, str] = field(default_factory=dict)

    def in_split(self, split: str) -> list[CanonicalExample]:
        return [e for e in self.examples if self.split_of[e.id] == split]


def load_source(dataset: str):
    """(utterances, descriptions) for a dataset name."""
    if dataset != "sample" and not SHARED_ROUTING.exists():
        raise RoutingConfigError(
            f"dataset {dataset!r} reads {SHARED_ROUTING}, which is not here; "
            "use --dataset sample (the project's own data)"
        )
    if dataset in ("ha-pt-BR", "ha-pt"):
        root = SHARED_ROUTING / "ohf_intents"
        return load_ha_utterances(root / "tests", dataset.removeprefix("ha-")), load_ha_descriptions(
            root / "intents.yaml"
        )
    if dataset == "clinc150":
        path = SHARED_ROUTING / "clinc150" / "data_full.json"
        return load_clinc_utterances(path), clinc_descriptions(path)
    if dataset == "sample":
        return (
            load_ha_utterances(SAMPLE_ROUTING / "tests", "pt-BR", synthetic=True),
            load_ha_descriptions(SAMPLE_ROUTING / "intents.yaml"),
        )
    raise RoutingConfigError(f"unknown routing dataset {dataset!r} ({', '.join(BUILT_IN)}, or a canonical file)")


def report_folder(warehouse_folder: Path, dataset: str) -> Path:
    """Where a dataset's report goes, for the CLI, the asset and the demo alike."""
    return warehouse_folder / "routing" / dataset_name(dataset)


def frozen_folder(warehouse_folder: Path) -> Path:
    """Where every dataset's test split hash is recorded (splits.check_frozen): beside the warehouse,
    never inside the installed package."""
    return warehouse_folder / "routing" / "frozen"


def anonymized(examples: list[CanonicalExample], names: list[str] = ()) -> tuple[list[CanonicalExample], int]:
    """The JEV design's sources are "anonimizados": each message and conversation turn through the project's
    redactor (e-mails, CPF, CNPJ, phone numbers and the `names` listed) before any candidate or baseline sees
    it. Its name detector stays off here: on ha-pt-BR and SGD it changed 164 and 631 texts, and those read
    were places ("São Paulo", "San Francisco", "Salvador"), which the intents need. The test split is hashed
    as its source gives it, before this: a frozen split keeps its identity when the redactor learns a new
    pattern. Returns the examples and how many changed."""
    from adri_pipeline.privacy import Redactor

    redact, out, changed = Redactor(names), [], 0
    for example in examples:
        turns = [turn.model_copy(update={"text": redact.text(turn.text)}) for turn in example.state.recent_turns]
        clean = example.model_copy(
            update={
                "utterance": redact.text(example.utterance),
                "state": example.state.model_copy(update={"recent_turns": turns}),
            }
        )
        changed += clean.utterance != example.utterance or turns != example.state.recent_turns
        out.append(clean if clean != example else example)
    return out, changed


def dataset_name(dataset: str) -> str:
    """A built-in dataset's name, or `file-<stem>` for a team's canonical file or folder."""
    if dataset in BUILT_IN or dataset in UNSEEN_INTENTS:
        return dataset
    return "file-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(dataset).stem).strip("-")


def build(config: RunConfig, record_dir: Path | None = None, raise_on_change: bool = True) -> Dataset:
    """Examples (anonymized) and frozen splits: composed from a built-in source, real SGD conversations, or
    a team's canonical file (every line validated; split by group_id like the rest). The test split's hash is
    checked and recorded in `record_dir` (frozen_folder) before anything is fitted; a changed one
    raises, unless `raise_on_change` is False (the Dagster asset, whose blocking check says it)."""
    excluded: list[tuple[str, CanonicalExample]] = []
    if config.dataset == "sgd":
        if not SHARED_ROUTING.exists():
            raise RoutingConfigError(f"dataset 'sgd' reads {SHARED_ROUTING / 'sgd'}, which is not here")
        examples = load_sgd(SHARED_ROUTING / "sgd", seed=config.seed)
        split_of = assign_splits(examples, seed=config.split_seed)
    elif config.dataset not in BUILT_IN and config.dataset not in UNSEEN_INTENTS:
        path = Path(config.dataset)
        if not path.exists():
            raise RoutingConfigError(
                f"unknown routing dataset {config.dataset!r}: not a built-in name "
                f"({', '.join(BUILT_IN)}) nor an existing canonical file or folder"
            )
        team = located_canonical(path)
        examples, excluded = team.examples, team.excluded
        split_of = assign_splits(examples, seed=config.split_seed)
    else:
        utterances, descriptions = load_source(UNSEEN_INTENTS.get(config.dataset, config.dataset))
        examples, split_of = build_dataset(
            utterances,
            descriptions,
            config.dataset,
            seed=config.seed,
            split_seed=config.split_seed,
            unseen_share=UNSEEN_SHARE if config.dataset in UNSEEN_INTENTS else 0.0,
        )
    assert not leaking_groups(examples, split_of)
    test = [e for e in examples if split_of[e.id] == "test"]
    digest = check_frozen(dataset_name(config.dataset), test, record_dir, raise_on_change=raise_on_change)
    examples, changed = anonymized(examples, config.redact_names)
    return with_extra_training(Dataset(examples, split_of, digest, excluded, changed), config)


def with_extra_training(dataset: Dataset, config: RunConfig) -> Dataset:
    """The dataset with config.extra_training's examples added to dev, for the tasks the source has
    (a D2 file adds nothing to a source without D2), anonymized like the rest. Per task they weigh
    together config.extra_training_weight times the source's own dev examples, so neither a small source
    drowns in them nor a large one ignores them. A file that is the dataset itself, or an example that shares its
    conversation with the source, is left out: no conversation is ever in two splits."""
    tasks = Counter(e.task for e in dataset.in_split("dev"))
    groups = {e.group_id for e in dataset.examples}
    added: dict[str, list[CanonicalExample]] = {}
    changed = 0
    for path in config.extra_training:
        if dataset_name(path) == dataset_name(config.dataset):
            continue
        if not Path(path).exists():
            raise RoutingConfigError(f"extra training file {path} does not exist (RunConfig.extra_training)")
        kept = [e for e in located_canonical(Path(path)).examples if e.task in tasks and e.group_id not in groups]
        added[path], redacted = anonymized(kept, config.redact_names)
        changed += redacted
    extra = [e for examples in added.values() for e in examples]
    if not extra:
        return dataset
    per_task = Counter(e.task for e in extra)
    return replace(
        dataset,
        examples=dataset.examples + extra,
        split_of={**dataset.split_of, **{e.id: "dev" for e in extra}},
        fit_weight={e.id: config.extra_training_weight * tasks[e.task] / per_task[e.task] for e in extra},
        extra_training={Path(path).name: len(examples) for path, examples in added.items() if examples},
        author_of={
            e.id: config.authors.get(path, Path(path).name) for path, examples in added.items() for e in examples
        },
        anonymized=dataset.anonymized + changed,
    )


def with_external_test(
    fitted_on: Dataset,
    external: CanonicalFile | list[CanonicalExample],
    name: str = "",
    record_dir: Path | None = None,
    redact_names: list[str] = (),
) -> Dataset:
    """Fit and calibrate on a dataset's dev/calibration splits; every external example is test, its
    hash checked and recorded under `name` (the file's dataset_name) like any test split. An
    external example that shares its id or its group (conversation) with the fit data is refused,
    naming the file and line it was read from (a CanonicalFile knows)."""
    where, excluded = ({}, []) if isinstance(external, list) else (external.where, external.excluded)
    frozen_hash = None if isinstance(external, list) else external.frozen_hash
    external = external if isinstance(external, list) else external.examples
    kept = [e for e in fitted_on.examples if fitted_on.split_of[e.id] != "test"]
    ids, groups = {e.id for e in kept}, {e.group_id for e in kept}
    clash = next((e for e in external if e.id in ids or e.group_id in groups), None)
    if clash is not None:
        shared = f"id {clash.id!r}" if clash.id in ids else f"group_id {clash.group_id!r}"
        place = where.get(clash.id, f"example {clash.id!r}")
        raise RoutingConfigError(
            f"{place}: {shared} is also in the data the candidates are fitted on "
            "(its dev or calibration split, or a file it also learns from: `--extra-training`, "
            "'none' fits on the dataset alone): that would test on training conversations"
        )
    split_of = {e.id: fitted_on.split_of[e.id] for e in kept} | {e.id: "test" for e in external}
    digest = frozen_hash or (check_frozen(name, external, record_dir) if name else split_hash(external))
    external, changed = anonymized(external, redact_names)
    test_set = f"{name or 'external test'} (out of source: fitted on none of it)"
    return Dataset(
        kept + external,
        split_of,
        digest,
        excluded,
        fitted_on.anonymized + changed,
        test_set,
        fitted_on.fit_weight,
        fitted_on.extra_training,
        fitted_on.author_of,
    )
