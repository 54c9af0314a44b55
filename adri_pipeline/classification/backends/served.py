"""A model behind a server: Ollama, or any OpenAI-compatible server (llama-server, vLLM, LM Studio).

What every server gets the same (docs/models.md): requests spread over the configured hosts, each
with its own parallel slots (`http://host:port*N`, N = OLLAMA_NUM_PARALLEL or llama-server's -np);
a full queue (429/503) is retried with exponential backoff; a timeout fails the document (retried
next run); a model the server does not serve stops the run with what to do. The answer is always
validated afterwards, whatever the server promised.

A host that drops a request or refuses the connection costs its slots, not the run: it is taken out
(`_HostsDown`), the document goes back for a host that answers, and the host is probed with backoff
(model_info: no document is sent to probe) and rejoins when it answers with the same weights. A run
starts with the hosts that answer and names the others. Only when every host is out, each after more
than `reconnect_retries` episodes or failed probes, does the run stop cleanly, keeping everything
answered.
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

# requests sent to a host beyond its declared slots (`host*SLOTS`): none. One queued at the server
# kept a slot from idling for the round trip (4 slots at 205 ms per answer, 400 documents: 0.986 of
# capacity against 0.951 without, benchmarks/slot_efficiency.py, 2026-12-02, one run each), but a team
# declares the slots it pays for and shares, and at a real model's seconds per answer the round trip
# is a tenth of that loss
QUEUED_PER_HOST = 0
SERVER_NAMES = {"ollama": "Ollama server", "openai": "OpenAI-compatible server"}
MAX_PROBE_INTERVAL_S = 30.0  # a host that stays away is asked again at least this often


class _HostGone(Exception):
    """This host dropped the request: the document goes to another host."""


class _HostsDown:
    """Which hosts are out, how many times in a row they failed, and their slot tokens held back
    until they rejoin. `failures` counts episodes (a drop that took the host out, or a
    failed probe), not the requests that were in flight at that moment."""

    def __init__(self):
        self.lock = threading.Lock()
        self.failures: dict[int, int] = {}  # host index -> consecutive failures (kept after a rejoin)
        self.out: set[int] = set()
        self.parked: dict[int, int] = {}  # host index -> slot tokens held back
        self.timers: list[threading.Timer] = []
        self.dropped_by: dict[int, str] = {}  # host index -> the error that last took it out
        # host index -> how many times it was taken out: an answer clears the host's failures only if
        # its request was sent after the latest take-out (one sent before says nothing of the host now)
        self.takeouts: dict[int, int] = {}


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
        # one token per parallel slot (plus QUEUED_PER_HOST); a request waits here for a token
        self._slots: queue.Queue[int] = queue.Queue()
        for index, (_, slots) in enumerate(parsed):
            for _ in range(slots + QUEUED_PER_HOST):
                self._slots.put(index)
        self.slots = sum(slots for _, slots in parsed)
        self._loaded_here: list[int] = []
        self._down = _HostsDown()
        self._gave_up: BackendError | None = None
        self._closed = False
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
        digest = digests.pop() or ""
        self._digest = digest  # what a probe compares a returning host with
        if silent:
            log.warning(
                "starting on %d of %d hosts; not answering: %s. Each is asked again with backoff and "
                "joins the run when it answers",
                len(self.servers) - len(silent),
                len(self.servers),
                "; ".join(f"{self.hosts[i]} ({exc})" for i, exc in silent.items()),
            )
            for index in silent:
                self._take_out(index)
        return digest

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
            if index in self._down.out:
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
        self._closed = True
        with self._down.lock:
            for timer in self._down.timers:
                timer.cancel()
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
        and the document goes to one that answers (`_take_out`). Anything else is not retried."""
        return tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(Overloaded),
            stop=tenacity.stop_after_attempt(self.overload_retries + 1),
            wait=tenacity.wait_exponential(multiplier=self.backoff_s, min=self.backoff_s),
            reraise=True,
        )

    # -- hosts that go away -----------------------------------------------------------------
    def _probe_delay(self, failures: int) -> float:
        return min(self.backoff_s * 2**failures, MAX_PROBE_INTERVAL_S)

    def _take_out(self, index: int, reason: Exception | None = None) -> None:
        """Out until a probe finds it answering; a host already out is not counted again."""
        down = self._down
        with down.lock:
            if index in down.out or self._closed:
                return
            down.out.add(index)
            down.takeouts[index] = down.takeouts.get(index, 0) + 1
            down.failures[index] = down.failures.get(index, 0) + 1
            delay = self._probe_delay(down.failures.get(index, 1))
            if reason is not None:
                log.warning(
                    "%s dropped the request (%s); its documents go to the hosts that answer, and it is "
                    "asked again in %.1f s",
                    self.hosts[index],
                    reason,
                    delay,
                )
            if reason is not None:
                down.dropped_by[index] = f"{type(reason).__name__}: {reason}"
            self._give_up_if_all_out(down.dropped_by.get(index, ""))
            self._schedule_probe(index, delay)

    def _schedule_probe(self, index: int, delay: float) -> None:
        timer = threading.Timer(delay, self._probe, args=(index,))
        timer.daemon = True
        self._down.timers.append(timer)
        timer.start()

    def _probe(self, index: int) -> None:
        """model_info: the host answers with the same weights -> it rejoins with its slot tokens."""
        if self._closed or self._gave_up:
            return
        server, down = self.servers[index], self._down
        try:
            info = server.model_info(self.model_name)
            same = (info.digest or "") == (self._digest or "")
        except (ServerUnreachable, TimedOut, ServerError, Overloaded, ModelMissing) as exc:
            with down.lock:
                down.failures[index] = down.failures.get(index, 0) + 1
                # the error that took the host out, then the probe's: the same words whichever came last
                self._give_up_if_all_out(
                    "; ".join(filter(None, [down.dropped_by.get(index), f"probe: {type(exc).__name__}: {exc}"]))
                )
                if not self._gave_up:
                    self._schedule_probe(index, self._probe_delay(down.failures[index]))
            return
        if not same:
            log.error(
                "%s came back serving other weights of %s (%s, the run uses %s): it stays out of this run",
                self.hosts[index],
                self.model_name,
                info.digest,
                self._digest,
            )
            with down.lock:  # never asked again: with every other host out too, the run stops
                down.failures[index] = self.reconnect_retries + 1
                self._give_up_if_all_out(f"{self.hosts[index]} came back serving other weights")
            return
        with down.lock:
            down.out.discard(index)
            for _ in range(down.parked.pop(index, 0)):
                self._slots.put(index)
        log.warning("%s answers again; it rejoins the run", self.hosts[index])

    def _give_up_if_all_out(self, reason: str = "") -> None:
        """Under the lock: every host out, each past its budget -> the run stops (everything answered is kept)."""
        down = self._down
        if len(down.out) < len(self.servers) or self._gave_up:
            return
        if all(down.failures.get(i, 0) > self.reconnect_retries for i in range(len(self.servers))):
            hosts = ", ".join(self.hosts)
            self._gave_up = BackendError(
                f"{self.server_name} at {hosts} went away during the run{f' ({reason})' if reason else ''}; "
                f"it did not come back after {self.reconnect_retries} retries. Everything answered so far is "
                "saved: restart the server and rerun to continue"
            )

    def _slot(self) -> int:
        """A slot token of a host that is in; tokens of a host that is out are held back for it."""
        while True:
            if self._gave_up is not None:
                raise self._gave_up
            if self._stopping.is_set():
                raise NotSent("the run is stopping")
            try:
                index = self._slots.get(timeout=0.2)
            except queue.Empty:
                continue
            with self._down.lock:
                if index not in self._down.out:
                    return index
                self._down.parked[index] = self._down.parked.get(index, 0) + 1

    def classify(self, prompt: Prompt, document: Document, retry=None) -> BackendResponse:
        messages = [
            {"role": "system", "content": prompt.system_message},
            {"role": "user", "content": build_user_message(document.title_text, document.text)},
        ]
        if retry:
            previous, message = retry
            messages += [{"role": "assistant", "content": previous}, {"role": "user", "content": message}]
        while True:
            index = self._slot()
            try:
                return self._chat(index, prompt, messages)
            except _HostGone:
                continue  # the document waits for a host that answers
            finally:
                self._slots.put(index)

    def stop(self) -> None:
        """Requests waiting for a slot are not sent (those already at the server finish)."""
        self._stopping.set()

    def _chat(self, index: int, prompt: Prompt, messages: list[dict]) -> BackendResponse:
        server = self.servers[index]
        host = server.host
        started = time.perf_counter()
        retrying = self._retrying()
        with self._down.lock:
            sent_after = self._down.takeouts.get(index, 0)
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
            self._take_out(index, exc)
            raise _HostGone(host) from None
        with self._down.lock:
            if self._down.takeouts.get(index, 0) == sent_after:  # it answered since it was last taken out
                self._down.failures.pop(index, None)  # its next drop starts a new count
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
