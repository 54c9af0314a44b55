"""dev / calibration / test by group_id (a group never spans two splits), stratified by gold label,
seeded. The test split is frozen before any tuning: its hash is recorded in the repository
(adri_pipeline/bundled/contracts/jev/frozen/) and every later build fails loudly if the test split changes."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

from sklearn.model_selection import StratifiedGroupKFold

from adri_pipeline.config import BUNDLED
from adri_pipeline.errors import AdriError
from adri_pipeline.jev.examples import CanonicalExample

FROZEN_DIR = BUNDLED / "contracts" / "jev" / "frozen"
SPLITS = ("dev", "calibration", "test")


class FrozenSplitChanged(AdriError, RuntimeError):
    """The test split differs from the one frozen in the repository: results would not compare."""


def assign_splits(examples: list[CanonicalExample], seed: int = 7, folds: int = 5) -> dict[str, str]:
    """example id -> split: one fold is test, one calibration, the rest dev."""
    labels = [str(e.gold_label) if e.task != "D4" else "|".join(e.gold_label) for e in examples]
    groups = [e.group_id for e in examples]
    splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    fold_of: dict[str, int] = {}
    with warnings.catch_warnings():  # rare intents have fewer groups than folds: they land where they can
        warnings.simplefilter("ignore", UserWarning)
        for fold, (_, held_out) in enumerate(splitter.split(examples, labels, groups)):
            for i in held_out:
                fold_of[examples[i].id] = fold
    return {e.id: "test" if fold_of[e.id] == 0 else "calibration" if fold_of[e.id] == 1 else "dev" for e in examples}


def split_hash(examples: list[CanonicalExample]) -> str:
    # token counts are filled by runs, not by the data: they stay out of the hash
    payload = json.dumps(sorted(e.model_dump_json(exclude={"metadata": {"n_tokens"}}) for e in examples),
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def recorded_hash(dataset: str, frozen_dir: Path = FROZEN_DIR) -> str | None:
    """The test split's hash frozen for this dataset, if any."""
    path = frozen_dir / f"{dataset}.test.sha256"
    return path.read_text(encoding="utf-8").split()[0] if path.exists() else None


def check_frozen(dataset: str, test_examples: list[CanonicalExample], frozen_dir: Path = FROZEN_DIR,
                 freeze_if_missing: bool = True, raise_on_change: bool = True) -> str:
    """Record the test hash the first time; afterwards, raise if it differs (unless the caller checks
    it itself: the Dagster asset check `frozen_test_split`)."""
    digest = split_hash(test_examples)
    path = frozen_dir / f"{dataset}.test.sha256"
    if path.exists():
        recorded = path.read_text(encoding="utf-8").split()[0]
        if recorded != digest and raise_on_change:
            raise FrozenSplitChanged(
                f"test split of {dataset!r} changed: {path} records {recorded[:16]}..., this build gives "
                f"{digest[:16]}... ({len(test_examples)} examples). Results against the frozen split are no "
                "longer comparable; restore the data/builder, or freeze a new version under a new dataset name.")
    elif freeze_if_missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{digest}  {len(test_examples)} test examples\n", encoding="utf-8")
    else:
        raise FrozenSplitChanged(f"no frozen test split for {dataset!r} at {path}")
    return digest


def leaking_groups(examples: list[CanonicalExample], split_of: dict[str, str]) -> set[str]:
    seen: dict[str, set[str]] = {}
    for e in examples:
        seen.setdefault(e.group_id, set()).add(split_of[e.id])
    return {g for g, splits in seen.items() if len(splits) > 1}
