"""dev / calibration / test by group_id (a group never spans two splits), stratified by the JEV
design's six strata, seeded. The test split is frozen before any tuning: its hash is recorded beside the
warehouse (and, for the built-in datasets, checked against the repository's reference in
contracts/jev/frozen/), and every later build fails loudly if the test split changes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from adri_pipeline.config import CONTRACTS
from adri_pipeline.errors import AdriError
from adri_pipeline.jev.examples import CanonicalExample, length_bucket

FROZEN_DIR = CONTRACTS / "jev" / "frozen"
SPLITS = ("dev", "calibration", "test")


class FrozenSplitChanged(AdriError, RuntimeError):
    """The test split differs from the one frozen in the repository: results would not compare."""


def strata(example: CanonicalExample) -> list[str]:
    """The JEV design §4 (task 26): "domínio, comprimento, ambiguidade, classe esperada, posição do
    turno e presença de agente ativo ou de sessões suspensas" — one value per dimension."""
    meta, state = example.metadata, example.state
    label = "|".join(example.gold_label) if isinstance(example.gold_label, list) else example.gold_label
    turn = meta.turn_index
    return [
        f"class={example.task}:{label}",
        f"domain={meta.domain or '-'}",
        f"length={meta.length_bucket or length_bucket(example.utterance)}",
        f"ambiguity={meta.ambiguity or '-'}",
        f"turn={'-' if turn is None else 'first' if turn <= 1 else 'early' if turn <= 4 else 'late'}",
        f"sessions={'active' if state.active_agent else 'none'}+{'suspended' if state.suspended_sessions else '-'}",
    ]


def assign_splits(examples: list[CanonicalExample], seed: int = 7, folds: int = 5) -> dict[str, str]:
    """example id -> split: one fold is test, one calibration, the rest dev. Whole groups are dealt
    to folds so that every stratum value (`strata`) spreads across folds in proportion: the greedy
    rule of scikit-learn's StratifiedGroupKFold — groups in order of how uneven their counts are,
    each to the fold where the per-value proportions across folds vary least, ties to the smallest
    fold — applied to all six dimensions at once (StratifiedGroupKFold takes one label only)."""
    groups = list(dict.fromkeys(e.group_id for e in examples))
    row = {g: i for i, g in enumerate(groups)}
    columns: dict[str, int] = {}
    cells = [(row[e.group_id], columns.setdefault(value, len(columns))) for e in examples for value in strata(e)]
    counts = np.zeros((len(groups), len(columns)))
    np.add.at(counts, tuple(np.array(cells).T), 1)
    totals = counts.sum(axis=0)
    order = np.random.default_rng(seed).permutation(len(groups))
    order = order[np.argsort(-counts[order].std(axis=1), kind="stable")]
    per_fold = np.zeros((folds, len(columns)))
    fold_of_group = np.empty(len(groups), int)
    for g in order:
        trial = per_fold[None, :, :] + np.eye(folds)[:, :, None] * counts[g][None, None, :]  # fold f gets g
        unevenness = (trial / totals).std(axis=1).mean(axis=1)
        best = np.flatnonzero(np.isclose(unevenness, unevenness.min()))
        fold = best[np.argmin(per_fold[best].sum(axis=1))]
        per_fold[fold] += counts[g]
        fold_of_group[g] = fold
    names = {0: "test", 1: "calibration"}
    return {e.id: names.get(int(fold_of_group[row[e.group_id]]), "dev") for e in examples}


def split_hash(examples: list[CanonicalExample]) -> str:
    # token counts are filled by runs, not by the data: they stay out of the hash
    payload = json.dumps(
        sorted(e.model_dump_json(exclude={"metadata": {"n_tokens"}}) for e in examples), ensure_ascii=False
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _recorded(path: Path) -> str | None:
    return path.read_text(encoding="utf-8").split()[0] if path.exists() else None


def recorded_hash(dataset: str, record_dir: Path | None = None, reference_dir: Path = FROZEN_DIR) -> str | None:
    """The test split's hash frozen for this dataset: the repository's reference for a built-in one,
    else the record beside the warehouse (`record_dir`), if any."""
    name = f"{dataset}.test.sha256"
    return _recorded(reference_dir / name) or (_recorded(record_dir / name) if record_dir else None)


def check_frozen(
    dataset: str,
    test_examples: list[CanonicalExample],
    record_dir: Path | None,
    reference_dir: Path = FROZEN_DIR,
    raise_on_change: bool = True,
) -> str:
    """Hash the test split before anything is fitted on the dataset, and check it against every
    record of it: the repository's reference (built-in datasets, read only) and the record beside the
    warehouse (`record_dir`: every dataset, a team's file or a `--test` file included), which is
    written the first time. A differing record raises, unless the caller says it itself
    (`raise_on_change` False: the Dagster asset check `frozen_test_split`)."""
    digest = split_hash(test_examples)
    name = f"{dataset}.test.sha256"
    for path in [reference_dir / name] + ([record_dir / name] if record_dir else []):
        recorded = _recorded(path)
        if recorded is not None and recorded != digest and raise_on_change:
            raise FrozenSplitChanged(
                f"test split of {dataset!r} changed: {path} records {recorded[:16]}..., this build gives "
                f"{digest[:16]}... ({len(test_examples)} examples). Results against the frozen split are no "
                "longer comparable; restore the data/builder, or freeze a new version under a new dataset name."
            )
    if record_dir is not None and not (record_dir / name).exists():
        record_dir.mkdir(parents=True, exist_ok=True)
        (record_dir / name).write_text(f"{digest}  {len(test_examples)} test examples\n", encoding="utf-8")
    return digest


def leaking_groups(examples: list[CanonicalExample], split_of: dict[str, str]) -> set[str]:
    seen: dict[str, set[str]] = {}
    for e in examples:
        seen.setdefault(e.group_id, set()).add(split_of[e.id])
    return {g for g, splits in seen.items() if len(splits) > 1}
