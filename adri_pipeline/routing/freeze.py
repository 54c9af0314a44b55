"""The JEV design's freeze ("Congelamento — nada daqui em diante"): between calibration and the
final test, each candidate's fitted state is written down — its temperatures, its abstention
thresholds, the digest of the artifact the performance runs load, and the test split's hash — and
the final test starts by checking that what is about to answer is what was written."""

from __future__ import annotations

import hashlib
import pickle
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from adri_pipeline.errors import AdriError


class FrozenStateChanged(AdriError, RuntimeError):
    """What is about to answer the final test is not what was frozen after calibration."""


class FreezeRecord(BaseModel):
    candidate: str
    kind: dict
    test_split_sha256: str
    temperature: dict[str, float]
    thresholds: dict[str, float]
    # sha256 of the pickled calibrated candidate: the artifact every performance run loads
    artifact_sha256: str
    frozen_at: str


def artifact_digest(calibrated) -> str:
    return hashlib.sha256(pickle.dumps(calibrated)).hexdigest()


def file_stem(candidate: str) -> str:
    """A candidate's name as a file name's stem (`jev:http://…` has characters no file name takes)."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in candidate)


def record_path(folder: Path, candidate: str) -> Path:
    return folder / f"{file_stem(candidate)}.json"


def freeze(calibrated, thresholds: dict[str, float], test_hash: str, folder: Path) -> Path:
    """Write the candidate's freeze record (before the final test) once; returns its path. A later
    evaluation of the candidate in the same folder compares what it fitted with that record and is
    refused, naming what changed (`compare_with_earlier`), unless the record is deleted to freeze anew."""
    record = FreezeRecord(
        candidate=calibrated.name,
        kind=calibrated.candidate.kind.describe(),
        test_split_sha256=test_hash,
        temperature=dict(calibrated.temperature),
        thresholds=dict(thresholds),
        artifact_sha256=artifact_digest(calibrated),
        frozen_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    path = record_path(folder, calibrated.name)
    if path.exists():
        compare_with_earlier(path, record)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json(indent=1), encoding="utf-8")
    return path


def compare_with_earlier(path: Path, now: FreezeRecord) -> None:
    """The design's "nada daqui em diante" across runs: what a later evaluation fitted is what the
    earlier one froze (kind, test split, temperatures, thresholds). The artifact's digest is not
    compared across processes: a pickle of a set of texts is ordered by each process's hash seed."""
    earlier = FreezeRecord.model_validate_json(path.read_text(encoding="utf-8"))

    def close(a: dict, b: dict) -> bool:
        return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-9 * max(1.0, abs(a[k])) for k in a)

    changed = [
        what
        for what, same in (
            ("kind", earlier.kind == now.kind),
            ("test split", earlier.test_split_sha256 == now.test_split_sha256),
            ("temperatures", close(earlier.temperature, now.temperature)),
            ("thresholds", close(earlier.thresholds, now.thresholds)),
        )
        if not same
    ]
    if changed:
        details = "; ".join(
            f"{what}: {before} -> {after}"
            for what, before, after in (
                ("temperatures", earlier.temperature, now.temperature),
                ("thresholds", earlier.thresholds, now.thresholds),
            )
            if what in changed
        )
        raise FrozenStateChanged(
            f"{path}: {now.candidate}'s {', '.join(changed)} changed since it was frozen on {earlier.frozen_at}"
            + (f" ({details})" if details else "")
            + ". Results would not be comparable with the frozen ones; "
            "restore what changed, or delete the record to freeze the candidate anew."
        )


def check_freeze(path: Path, calibrated, thresholds: dict[str, float], test_hash: str) -> FreezeRecord:
    """The record as read back from disk against the state about to answer the test: the same test
    split, temperatures, thresholds and artifact, or FrozenStateChanged naming what differs."""
    record = FreezeRecord.model_validate_json(path.read_text(encoding="utf-8"))
    now = {
        "test_split_sha256": test_hash,
        "temperature": dict(calibrated.temperature),
        "thresholds": dict(thresholds),
        "artifact_sha256": artifact_digest(calibrated),
    }
    changed = [key for key, value in now.items() if getattr(record, key) != value]
    if changed:
        raise FrozenStateChanged(
            f"{path}: {calibrated.name}'s {', '.join(changed)} changed after the freeze; "
            "the final test answers only with the state frozen after calibration"
        )
    return record
