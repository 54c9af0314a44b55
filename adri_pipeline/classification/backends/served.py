"""A model behind a server: Ollama, or any OpenAI-compatible server (llama-server, vLLM, LM Studio).

What every server gets the same (docs/models.md): requests spread over the configured hosts, each
with its own parallel slots (`http://host:port*N`, N = OLLAMA_NUM_PARALLEL or llama-server's -np);
a full queue (429/503) is retried with exponential backoff; a timeout fails the document (retried
next run); a server that drops the connection mid-request is retried a bounded number of times and
then stops the run cleanly (what was answered is kept); a model the server does not serve stops
the run with what to do. The answer is always validated afterwards, whatever the server promised.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time

import psutil
import tenacity

from adri_pipeline.classification.backends.base import (
    BackendError,
    BackendResponse,
    DocumentFailed,
    NotSent,
    stop_below_memory_floor,
)
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.corpus import Document
from adri_pipeline.classification.prompt import Prompt, build_user_message
from adri_pipeline.config import Settings
from adri_pipeline.models import ModelMissing, Overloaded, ServerError, ServerUnreachable, TimedOut, parse_host
from adri_pipeline.models.base import is_this_machine
from adri_pipeline.models.select import make_server

log = logging.getLogger(__name__)

QUEUED_PER_HOST = 1  # far below Ollama's OLLAMA_MAX_QUEUE (512): never a 503 of our own making
SERVER_NAMES = {"ollama": "Ollama server", "openai": "OpenAI-compatible server"}


class ServedBackend:
    def __init__(
        self,
        provider: str,
        model: str,
        hosts: list[str],
        *,
        timeout_s: float = 300.0,
        keep_alive: str = "10m",
        options: dict | None = None,
        memory_floor_mb: int = 1024,
        overload_retries: int = 5,
        backoff_s: float = 0.5,
        reconnect_retries: int = 3,
    ):
        env = "OLLAMA_HOST or ADRI_OLLAMA_HOSTS" if provider == "ollama" else "OPENAI_BASE_URL or ADRI_OPENAI_HOSTS"
        if not hosts:
            raise BackendError(f"no {SERVER_NAMES[provider]} configured (set {env})")
        self.name = provider
        self.server_name = SERVER_NAMES[provider]
        self.model_name = model
        self.model = f"{provider}:{model}"
        # the defaults, never the environment: whoever runs this passes the settings' options
        self.options = options if options is not None else Settings.model_construct().model_options(provider)
        self.params = {"options": self.options}
        self.memory_floor_mb = memory_floor_mb
        self.overload_retries = overload_retries
        self.reconnect_retries = reconnect_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.requests_sent = 0  # chat requests really sent, answered or not
        self._stopping = threading.Event()
        self._count_lock = threading.Lock()
        parsed = [parse_host(h) for h in hosts]
        self.servers = [make_server(provider, host, timeout_s, keep_alive) for host, _ in parsed]
        self.hosts = [s.host for s in self.servers]
        # one token per parallel slot plus one request queued at each server, so a slot that frees
        # starts the next request at once instead of idling for the round trip
        # (benchmarks/slot_efficiency.py); a request waits here for a token
        self._slots: queue.Queue[int] = queue.Queue()
        for index, (_, slots) in enumerate(parsed):
            for _ in range(slots + QUEUED_PER_HOST):
                self._slots.put(index)
        self.slots = sum(slots for _, slots in parsed)
        self._loaded_here: list[int] = []
        self._digest: str | None = None
        self._size_bytes = 0
        self.local = all(is_this_machine(h) for h in self.hosts)

    # -- identity ---------------------------------------------------------------------------
    @property
    def digest(self) -> str:
        if self._digest is None:
            self._digest = self._find_digest()
        return self._digest

    def _find_digest(self) -> str:
        digests = set()
        for server in self.servers:
            try:
                info = self._call(server, server.model_info, self.model_name)
            except ModelMissing as exc:
                raise BackendError(f"{exc}: {server.missing_hint(self.model_name)}") from None
            digests.add(info.digest)
            self._size_bytes = max(self._size_bytes, info.size_bytes)
        if len(digests) > 1:
            raise BackendError(f"hosts serve different builds of {self.model_name!r}: {sorted(digests)}")
        return digests.pop() or ""

    def _call(self, server, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ServerUnreachable, TimedOut):
            raise BackendError(
                f"{self.server_name} not reachable at {server.host}: {server.start_hint} or use --backend embedded"
            ) from None

    # -- lifecycle --------------------------------------------------------------------------
    def prepare(self, codebook: Codebook, prompt: Prompt) -> None:
        _ = self.digest
        unchecked: list[str] = []  # said once for the run, loudly, not once per host
        for index, server in enumerate(self.servers):
            if server.resident or self._call(server, server.is_loaded, self.model_name):
                continue
            if is_this_machine(server.host):
                self._check_fits(server.host)
            else:
                unchecked.append(server.host)
            log.info("loading %s on %s", self.model_name, server.host)
            self._call(server, server.load, self.model_name)
            self._loaded_here.append(index)
        if unchecked:
            log.warning("MEMORY CHECK SKIPPED for %d host(s) that are not this machine (%s): their free memory "
                        "is unknown here; a server that runs out answers with errors, and the run stops "
                        "keeping what it classified", len(unchecked), ", ".join(unchecked))

    def close(self) -> None:
        for index in self._loaded_here:
            try:
                self.servers[index].unload(self.model_name)
                log.info("unloaded %s from %s", self.model_name, self.hosts[index])
            except (ServerUnreachable, TimedOut, ServerError, ModelMissing, Overloaded) as exc:
                log.warning("could not unload %s from %s: %s", self.model_name, self.hosts[index], exc)
        self._loaded_here.clear()

    def _check_fits(self, host: str) -> None:
        """Before loading: the model's size as the server reports it against this machine's free
        memory, only when the server is this machine."""
        needed_mb = self._size_bytes / 2**20
        available_mb = psutil.virtual_memory().available / 2**20
        if needed_mb > available_mb:
            raise BackendError(
                f"{self.model_name} needs about {needed_mb:.0f} MB to load and {available_mb:.0f} MB are free: "
                "close other programs, choose a smaller or more quantized model (--model), or point "
                "the backend at a bigger machine. Nothing was classified or written.")

    def check_resources(self) -> None:
        if not self.local:
            return  # a remote server's memory is its own; the server answers 5xx when it runs out
        stop_below_memory_floor(self.memory_floor_mb, f"{self.model_name} is served on this machine")

    # -- one answer -------------------------------------------------------------------------
    def _retrying(self, host: str) -> tenacity.Retrying:
        """Two budgets, counted apart: a full queue (429/503) is waited out `overload_retries` times
        (backoff 1, 2, 4... x backoff_s); a dropped connection — the server may be restarting — is
        retried `reconnect_retries` times (2, 4, 8... x backoff_s). Anything else is not retried."""
        failures = {"overloaded": 0, "dropped": 0}
        budget = {"overloaded": self.overload_retries, "dropped": self.reconnect_retries}

        def kind(state) -> str:
            return "overloaded" if isinstance(state.outcome.exception(), Overloaded) else "dropped"

        def exhausted(state) -> bool:
            failures[kind(state)] += 1
            return failures[kind(state)] > budget[kind(state)]

        def backoff(state) -> float:
            shift = failures[kind(state)] - (1 if kind(state) == "overloaded" else 0)
            return self.backoff_s * 2**shift

        def announce(state) -> None:
            if kind(state) == "dropped":
                log.warning("%s dropped the request (%s); retrying in %.1f s", host, state.outcome.exception(),
                            state.next_action.sleep)

        return tenacity.Retrying(retry=tenacity.retry_if_exception_type((Overloaded, ServerUnreachable)),
                                 stop=exhausted, wait=backoff, before_sleep=announce, reraise=True)

    def classify(self, prompt: Prompt, document: Document, retry=None) -> BackendResponse:
        messages = [
            {"role": "system", "content": prompt.system_message},
            {"role": "user", "content": build_user_message(document.title_text, document.text)},
        ]
        if retry:
            previous, message = retry
            messages += [{"role": "assistant", "content": previous}, {"role": "user", "content": message}]
        index = self._slots.get()
        try:
            if self._stopping.is_set():
                raise NotSent("the run is stopping")
            return self._chat(index, prompt, messages)
        finally:
            self._slots.put(index)

    def stop(self) -> None:
        """Requests waiting for a slot are not sent (those already at the server finish)."""
        self._stopping.set()

    def _chat(self, index: int, prompt: Prompt, messages: list[dict]) -> BackendResponse:
        server = self.servers[index]
        host = server.host
        started = time.perf_counter()
        retrying = self._retrying(host)
        try:
            for attempt in retrying:
                with attempt:
                    with self._count_lock:
                        self.requests_sent += 1
                    answer = server.chat(self.model_name, messages, prompt.schema, self.options)
        except ModelMissing:
            raise BackendError(
                f"model {self.model_name!r} not found on {host}: {server.missing_hint(self.model_name)}"
            ) from None
        except (Overloaded, ServerError) as exc:
            raise DocumentFailed(f"{host} answered {exc.status}: {exc}") from None
        except TimedOut:
            raise DocumentFailed(f"{host} did not answer within the timeout of {self.timeout_s:g} s "
                                 "(ADRI_REQUEST_TIMEOUT_S)") from None
        except ServerUnreachable as exc:
            raise BackendError(
                f"{self.server_name} at {host} went away during the run ({exc}); "
                f"it did not come back after {self.reconnect_retries} retries. Everything answered so "
                "far is saved: restart the server and rerun to continue") from None
        try:
            content = json.loads(answer.raw)
        except json.JSONDecodeError:
            content = None
        return BackendResponse(
            content=content,
            raw=answer.raw,
            seconds=time.perf_counter() - started,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            timings={**answer.timings, "host": host},
            cut=answer.finish_reason == "length",
        )
