"""A model behind a server: Ollama, or any OpenAI-compatible server (llama-server, vLLM, LM Studio).

What every server gets the same (docs/models.md): requests spread over the configured hosts, each
with its own parallel slots (`http://host:port*N`, N = OLLAMA_NUM_PARALLEL or llama-server's -np);
a full queue (429/503) is retried with exponential backoff; a timeout fails the document (retried
next run); a model the server does not serve stops the run with what to do. The answer is always
validated afterwards, whatever the server promised.

A host that drops a request or refuses the connection costs its slots, not the run: it is taken out
of the host pool (host_pool.py), the document goes back for a host that answers, and the host rejoins
when it answers with the same weights. A run starts with the hosts that answer and names the others;
when the pool gives up, the run stops cleanly, keeping everything answered.
"""

from __future__ import annotations

import json
import logging
import threading
import time

import psutil
import tenacity

from adri_pipeline.classification.backends.base import (
    BackendError,
    BackendResponse,
    DocumentFailed,
    stop_below_memory_floor,
)
from adri_pipeline.classification.backends.host_pool import HostPool
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.corpus import Document
from adri_pipeline.classification.prompt import Prompt, build_user_message
from adri_pipeline.config import Settings
from adri_pipeline.models.base import (
    ModelMissing,
    Overloaded,
    ServerError,
    ServerUnreachable,
    TimedOut,
    is_this_machine,
)
from adri_pipeline.models.select import make_server, parse_host

log = logging.getLogger(__name__)

SERVER_NAMES = {"ollama": "Ollama server", "openai": "OpenAI-compatible server"}


class _HostGone(Exception):
    """This host dropped the request: the document goes to another host."""


class ServedBackend:
    """The model protocol over a pool of hosts (HostPool): the weights every host serves, loading and
    unloading them, and one chat per document, retried while a host's queue is full."""

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
        self._count_lock = threading.Lock()
        parsed = [parse_host(h) for h in hosts]
        self.pool = HostPool(
            [make_server(provider, host, timeout_s, keep_alive) for host, _ in parsed],
            [slots for _, slots in parsed],
            self.server_name,
            model,
            backoff_s,
            reconnect_retries,
        )
        self.servers, self.hosts, self.slots = self.pool.servers, self.pool.hosts, self.pool.slots
        self._loaded_here: list[int] = []
        self._size_bytes = 0
        self.local = all(is_this_machine(h) for h in self.hosts)

    # -- identity ---------------------------------------------------------------------------
    @property
    def digest(self) -> str:
        if self.pool.digest is None:
            self._find_digest()
        return self.pool.digest

    def _find_digest(self) -> None:
        """The weights every answering host serves; a host that does not answer is left out and
        probed (it joins when it answers with the same weights); none answering is an error."""
        digests, silent = set(), {}
        for index, server in enumerate(self.servers):
            try:
                info = server.model_info(self.model_name)
            except ModelMissing as exc:
                raise BackendError(f"{exc}: {server.missing_hint(self.model_name)}") from None
            except (ServerUnreachable, TimedOut) as exc:
                silent[index] = exc
                continue
            digests.add(info.digest)
            self._size_bytes = max(self._size_bytes, info.size_bytes)
        if len(silent) == len(self.servers):
            raise BackendError(self._silence(self.servers[0], list(silent.values()), self.hosts))
        if len(digests) > 1:
            raise BackendError(f"hosts serve different builds of {self.model_name!r}: {sorted(digests)}")
        self.pool.digest = digests.pop() or ""  # what a probe compares a returning host with
        if silent:
            log.warning(
                "starting on %d of %d hosts; not answering: %s. Each is asked again with backoff and "
                "joins the run when it answers",
                len(self.servers) - len(silent),
                len(self.servers),
                "; ".join(f"{self.hosts[i]} ({exc})" for i, exc in silent.items()),
            )
            for index in silent:
                self.pool.take_out(index)

    def _call(self, server, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ServerUnreachable, TimedOut) as exc:
            raise BackendError(self._silence(server, [exc], [server.host])) from None

    def _silence(self, server, failures: list[Exception], hosts: list[str]) -> str:
        """ "Not reachable" (nothing accepts the connection: start it) is not "not answering" (it accepts
        and says nothing within the timeout: busy loading, hung, or the wrong service on that port)."""
        if all(isinstance(f, TimedOut) for f in failures):
            return (
                f"{self.server_name} at {', '.join(hosts)} accepts connections but did not answer within "
                f"{self.timeout_s:g} s: it may be loading a model, hung, or another service on that port; "
                "check it, or use --backend embedded"
            )
        return f"{self.server_name} not reachable at {', '.join(hosts)}: {server.start_hint} or use --backend embedded"

    # -- lifecycle --------------------------------------------------------------------------
    def prepare(self, codebook: Codebook, prompt: Prompt) -> None:
        _ = self.digest
        unchecked: list[str] = []  # said once for the run, loudly, not once per host
        for index, server in enumerate(self.servers):
            if index in self.pool.out:
                continue  # it loads its model on its first request once it answers
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
            log.warning(
                "MEMORY CHECK SKIPPED for %d host(s) that are not this machine (%s): their free memory "
                "is unknown here; a server that runs out answers with errors, and the run stops "
                "keeping what it classified",
                len(unchecked),
                ", ".join(unchecked),
            )

    def close(self) -> None:
        self.pool.close()
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
                "the backend at a bigger machine. Nothing was classified or written."
            )

    def check_resources(self) -> None:
        if not self.local:
            return  # a remote server's memory is its own; the server answers 5xx when it runs out
        stop_below_memory_floor(self.memory_floor_mb, f"{self.model_name} is served on this machine")

    # -- one answer -------------------------------------------------------------------------
    def _retrying(self) -> tenacity.Retrying:
        """A full queue (429/503) is waited out `overload_retries` times (backoff 1, 2, 4... x
        backoff_s) on the same host. A dropped connection is not retried here: the host is taken out
        and the document goes to one that answers (HostPool.take_out). Anything else is not retried."""
        return tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(Overloaded),
            stop=tenacity.stop_after_attempt(self.overload_retries + 1),
            wait=tenacity.wait_exponential(multiplier=self.backoff_s, min=self.backoff_s),
            reraise=True,
        )

    def classify(self, prompt: Prompt, document: Document, retry=None) -> BackendResponse:
        messages = [
            {"role": "system", "content": prompt.system_message},
            {"role": "user", "content": build_user_message(document.title_text, document.text)},
        ]
        if retry:
            previous, message = retry
            messages += [{"role": "assistant", "content": previous}, {"role": "user", "content": message}]
        while True:
            index = self.pool.slot()
            try:
                return self._chat(index, prompt, messages)
            except _HostGone:
                continue  # the document waits for a host that answers
            finally:
                self.pool.put_back(index)

    def stop(self) -> None:
        """Requests waiting for a slot are not sent (those already at the server finish)."""
        self.pool.stop()

    def _chat(self, index: int, prompt: Prompt, messages: list[dict]) -> BackendResponse:
        server = self.servers[index]
        host = server.host
        started = time.perf_counter()
        retrying = self._retrying()
        sent = self.pool.sent(index)
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
            raise DocumentFailed(
                f"{host} did not answer within the timeout of {self.timeout_s:g} s (ADRI_REQUEST_TIMEOUT_S)"
            ) from None
        except ServerUnreachable as exc:
            self.pool.take_out(index, exc)
            raise _HostGone(host) from None
        self.pool.answered(index, sent)
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
