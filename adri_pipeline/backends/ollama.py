"""Production backend: a qwen-class model served by Ollama, through the official `ollama` client.

Known server behaviours handled here (DESIGN §4): `format` may be ignored (the answer is validated
afterwards anyway), a full queue answers 503 (exponential backoff), an unknown model answers 404
(the message says `ollama pull`), a server that drops the connection mid-request is retried with a
bounded backoff and then stops the run cleanly (what was answered is kept). Requests are spread over the configured hosts, each with its own number of parallel slots
(`http://host:11434*N`, matching that server's OLLAMA_NUM_PARALLEL).
"""

from __future__ import annotations

import json
import logging
import queue
import socket
import threading
import time
from urllib.parse import urlparse

import httpx
import ollama
import psutil

from adri_pipeline.backends.base import BackendError, BackendResponse, DocumentFailed, NotSent
from adri_pipeline.codebook import Codebook
from adri_pipeline.config import Settings
from adri_pipeline.corpus import Document
from adri_pipeline.prompt import Prompt, build_user_message

log = logging.getLogger(__name__)

NANOSECONDS = 1e9
QUEUED_PER_HOST = 1  # far below Ollama's OLLAMA_MAX_QUEUE (512): never a 503 of our own making


def parse_host(spec: str) -> tuple[str, int]:
    """'http://gpu-box:11434*4' -> (url, 4 parallel slots); without '*N', one slot."""
    host, _, slots = spec.strip().partition("*")
    return host, int(slots) if slots else 1


def make_client(host: str, timeout_s: float) -> ollama.Client:
    """The one way this project talks to an Ollama server: a bounded connect, a request timeout."""
    return ollama.Client(host=host, timeout=httpx.Timeout(timeout_s, connect=5.0))


def _same_model(listed: str | None, wanted: str) -> bool:
    return listed in (wanted, f"{wanted}:latest")


def is_this_machine(url: str) -> bool:
    """Only then can local free memory say anything about the server's."""
    host = urlparse(url if "://" in url else f"http://{url}").hostname or ""
    return host in ("127.0.0.1", "localhost", "::1", "0.0.0.0", socket.gethostname(), socket.getfqdn())


class OllamaBackend:
    name = "ollama"

    def __init__(
        self,
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
        if not hosts:
            raise BackendError("no Ollama host configured (set OLLAMA_HOST or ADRI_OLLAMA_HOSTS)")
        self.model_name = model
        self.model = f"ollama:{model}"
        self.keep_alive = keep_alive
        self.options = options if options is not None else Settings().ollama_options
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
        self.hosts = [host for host, _ in parsed]
        self.clients = [make_client(h, timeout_s) for h in self.hosts]
        # one token per parallel slot (OLLAMA_NUM_PARALLEL of each server) plus one request queued at
        # each server, so a slot that frees starts the next request at once instead of idling for the
        # round trip (benchmarks/slot_efficiency.py); a request waits here for a token
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
        for host, client in zip(self.hosts, self.clients):
            listed = self._call(host, client.list)
            match = [m for m in listed.models if _same_model(m.model, self.model_name)]
            if not match:
                raise BackendError(
                    f"model {self.model_name!r} is not pulled on {host}: run `ollama pull {self.model_name}`"
                )
            digests.add(match[0].digest)
            self._size_bytes = max(self._size_bytes, match[0].size or 0)
        if len(digests) > 1:
            raise BackendError(f"hosts serve different builds of {self.model_name!r}: {sorted(digests)}")
        return digests.pop() or ""

    def _call(self, host: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ConnectionError:
            raise BackendError(
                f"Ollama server not reachable at {host}: start it (`ollama serve`) or use --backend embedded"
            ) from None

    # -- lifecycle --------------------------------------------------------------------------
    def prepare(self, codebook: Codebook, prompt: Prompt) -> None:
        _ = self.digest
        for index, (host, client) in enumerate(zip(self.hosts, self.clients)):
            running = self._call(host, client.ps)
            if not any(_same_model(m.model, self.model_name) for m in running.models):
                self._check_fits(host)
                log.info("loading %s on %s", self.model_name, host)
                self._call(host, client.generate, model=self.model_name, prompt="", keep_alive=self.keep_alive)
                self._loaded_here.append(index)

    def close(self) -> None:
        for index in self._loaded_here:
            try:
                self.clients[index].generate(model=self.model_name, prompt="", keep_alive=0)
                log.info("unloaded %s from %s", self.model_name, self.hosts[index])
            except (ConnectionError, ollama.ResponseError, httpx.HTTPError) as exc:
                log.warning("could not unload %s from %s: %s", self.model_name, self.hosts[index], exc)
        self._loaded_here.clear()

    def _check_fits(self, host: str) -> None:
        """Before loading: the model's size as the server reports it against this machine's free
        memory, only when the server is this machine."""
        if not is_this_machine(host):
            log.warning("memory check skipped: %s is not this machine, its free memory is unknown here", host)
            return
        needed_mb = self._size_bytes / 2**20
        available_mb = psutil.virtual_memory().available / 2**20
        if needed_mb > available_mb:
            raise BackendError(
                f"{self.model_name} needs about {needed_mb:.0f} MB to load and {available_mb:.0f} MB are free: "
                "close other programs, choose a smaller or more quantized model (--model), or point "
                "OLLAMA_HOST at a bigger machine. Nothing was classified or written.")

    def check_resources(self) -> None:
        if not self.local:
            return  # a remote server's memory is its own; the server answers 5xx when it runs out
        available_mb = psutil.virtual_memory().available / 2**20
        if available_mb < self.memory_floor_mb:
            raise BackendError(
                f"stopping between documents: {available_mb:.0f} MB free, below the floor of "
                f"{self.memory_floor_mb} MB (ADRI_MEMORY_FLOOR_MB). Everything classified so far is "
                "saved; close other programs or use a smaller model, then rerun to continue."
            )

    # -- one answer -------------------------------------------------------------------------
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
        host, client = self.hosts[index], self.clients[index]
        started = time.perf_counter()
        dropped = overloaded = 0
        while True:
            with self._count_lock:
                self.requests_sent += 1
            try:
                response = client.chat(
                    model=self.model_name, messages=messages, format=prompt.schema, think=False,
                    options=self.options, keep_alive=self.keep_alive,
                )
                break
            except ollama.ResponseError as exc:
                if exc.status_code == 404:
                    raise BackendError(
                        f"model {self.model_name!r} not found on {host}: run `ollama pull {self.model_name}`"
                    ) from None
                if exc.status_code in (429, 503) and overloaded < self.overload_retries:
                    time.sleep(self.backoff_s * 2**overloaded)
                    overloaded += 1
                    continue
                raise DocumentFailed(f"{host} answered {exc.status_code}: {exc.error}") from None
            except httpx.TimeoutException:
                raise DocumentFailed(f"{host} did not answer within the timeout of {self.timeout_s:g} s "
                                     "(ADRI_REQUEST_TIMEOUT_S)") from None
            except (ConnectionError, httpx.TransportError) as exc:
                # the server died mid-request or refuses connections: it may be restarting
                dropped += 1
                if dropped <= self.reconnect_retries:
                    log.warning("%s dropped the request (%s); retrying in %.1f s", host, type(exc).__name__,
                                self.backoff_s * 2**dropped)
                    time.sleep(self.backoff_s * 2**dropped)
                    continue
                raise BackendError(
                    f"Ollama server at {host} went away during the run ({type(exc).__name__}: {exc}); "
                    f"it did not come back after {self.reconnect_retries} retries. Everything answered so "
                    "far is saved: restart the server and rerun to continue") from None
        raw = response.message.content or ""
        try:
            content = json.loads(raw)
        except json.JSONDecodeError:
            content = None
        return BackendResponse(
            content=content,
            raw=raw,
            seconds=time.perf_counter() - started,
            prompt_tokens=response.prompt_eval_count or 0,
            completion_tokens=response.eval_count or 0,
            timings={
                "total_s": (response.total_duration or 0) / NANOSECONDS,
                "load_s": (response.load_duration or 0) / NANOSECONDS,
                "prompt_eval_s": (response.prompt_eval_duration or 0) / NANOSECONDS,
                "eval_s": (response.eval_duration or 0) / NANOSECONDS,
                "host": host,
            },
        )
