"""What a model server offers, whatever API it speaks, and the errors it may give.

Each server class translates its client's exceptions into these, so the callers (the classification
backend, the routing baseline, the judges) handle a 503, a timeout or a dropped connection once."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlparse


@dataclass(frozen=True)
class ModelInfo:
    name: str
    digest: str  # what identifies the weights; part of every cache key
    size_bytes: int = 0
    family: str = ""  # e.g. "qwen2", "gemma3" (filled where it costs nothing; else ChatServer.family)


@dataclass
class ChatAnswer:
    raw: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""
    timings: dict = field(default_factory=dict)


@dataclass
class NextToken:
    """The most likely first tokens of an answer and their log-probabilities, read from the one
    forward pass that would produce it (the server's `top_logprobs`), and what reading the prompt cost."""

    top_logprobs: dict[str, float]  # token text as the server decoded it -> natural log-probability
    prompt_tokens: int = 0


class NoLogprobs(RuntimeError):
    """The server answered without the log-probabilities it was asked for (an older Ollama, a server
    whose OpenAI compatibility stops at text)."""


class ServerUnreachable(ConnectionError):
    """Refused the connection, or dropped it mid-request (the server died or is restarting)."""


class ModelMissing(LookupError):
    """The server does not serve this model."""


class Overloaded(RuntimeError):
    """429 or 503: the server's queue is full; worth retrying after a pause."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class TimedOut(TimeoutError):
    """No answer within the request timeout."""


class ServerError(RuntimeError):
    """Any other error status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ChatServer(Protocol):
    provider: str  # "ollama" | "openai"
    host: str
    start_hint: str  # what to run when the server is not there
    resident: bool  # True when the server loads its model at start (nothing to load or unload per run)

    def model_info(self, model: str) -> ModelInfo: ...

    def family(self, model: str) -> str: ...

    def missing_hint(self, model: str) -> str: ...

    def is_loaded(self, model: str) -> bool: ...

    def load(self, model: str) -> None: ...

    def unload(self, model: str) -> None: ...

    def chat(self, model: str, messages: list[dict], schema: dict, options: dict) -> ChatAnswer: ...

    def next_token(self, model: str, messages: list[dict], top: int, options: dict) -> NextToken:
        """One generated token at temperature 0 with the `top` most likely ones (raises NoLogprobs)."""
        ...


def is_this_machine(url: str) -> bool:
    """Only then can local free memory say anything about the server's."""
    host = urlparse(url if "://" in url else f"http://{url}").hostname or ""
    return host in ("127.0.0.1", "localhost", "::1", "0.0.0.0", socket.gethostname(), socket.getfqdn())


def family_from_name(name: str) -> str:
    """'Qwen/Qwen2.5-7B-Instruct' -> 'qwen', 'gemma-3-270m.gguf' -> 'gemma': the leading letters of
    the file or repository name, when the server reports no architecture."""
    base = re.split(r"[/\\]", name.strip())[-1].lower()
    match = re.match(r"[a-z]+", base)
    return match.group(0) if match else base
