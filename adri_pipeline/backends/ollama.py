"""Production backend: a qwen-class model served by Ollama, through the official `ollama` client.

Known server behaviours handled here (DESIGN §4): `format` may be ignored (the answer is validated
afterwards anyway), a full queue answers 503 (exponential backoff), an unknown model answers 404
(the message says `ollama pull`). Requests are spread over the configured hosts, each with its own number of parallel slots
(`http://host:11434*N`, matching that server's OLLAMA_NUM_PARALLEL).
"""

from __future__ import annotations

import json
import logging
import queue
import time

import httpx
import ollama
import psutil

from adri_pipeline.backends.base import BackendError, BackendResponse, Document, DocumentFailed
from adri_pipeline.codebook import Codebook
from adri_pipeline.config import Settings
from adri_pipeline.prompt import Prompt, build_user_message

log = logging.getLogger(__name__)

NANOSECONDS = 1e9


def parse_host(spec: str) -> tuple[str, int]:
    """'http://gpu-box:11434*4' -> (url, 4 parallel slots); without '*N', one slot."""
    host, _, slots = spec.strip().partition("*")
    return host, int(slots) if slots else 1


def _same_model(listed: str | None, wanted: str) -> bool:
    return listed in (wanted, f"{wanted}:latest")


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
        self.backoff_s = backoff_s
        parsed = [parse_host(h) for h in hosts]
        self.hosts = [host for host, _ in parsed]
        self.clients = [ollama.Client(host=h, timeout=httpx.Timeout(timeout_s, connect=5.0)) for h in self.hosts]
        # one token per parallel slot (OLLAMA_NUM_PARALLEL of each server); a request waits for a free slot
        self._slots: queue.Queue[int] = queue.Queue()
        for index, (_, slots) in enumerate(parsed):
            for _ in range(slots):
                self._slots.put(index)
        self.slots = self._slots.qsize()
        self._loaded_here: list[int] = []
        self._digest: str | None = None

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
            match = [m.digest for m in listed.models if _same_model(m.model, self.model_name)]
            if not match:
                raise BackendError(
                    f"model {self.model_name!r} is not pulled on {host}: run `ollama pull {self.model_name}`"
                )
            digests.add(match[0])
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

    def check_resources(self) -> None:
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
            {"role": "user", "content": build_user_message(document.title, document.text)},
        ]
        if retry:
            previous, message = retry
            messages += [{"role": "assistant", "content": previous}, {"role": "user", "content": message}]
        index = self._slots.get()
        try:
            return self._chat(index, prompt, messages)
        finally:
            self._slots.put(index)

    def _chat(self, index: int, prompt: Prompt, messages: list[dict]) -> BackendResponse:
        host, client = self.hosts[index], self.clients[index]
        started = time.perf_counter()
        for attempt in range(self.overload_retries + 1):
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
                if exc.status_code in (429, 503) and attempt < self.overload_retries:
                    time.sleep(self.backoff_s * 2**attempt)
                    continue
                raise DocumentFailed(f"{host} answered {exc.status_code}: {exc.error}") from None
            except httpx.TimeoutException:
                raise DocumentFailed(f"{host} did not answer within the timeout") from None
            except ConnectionError:
                raise BackendError(f"Ollama server at {host} went away during the run") from None
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
