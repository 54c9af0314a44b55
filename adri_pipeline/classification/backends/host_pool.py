"""The hosts of one served model and their parallel slots, apart from how the model is asked: a request
waits for a slot token of a host that is in; a host that drops a request or refuses the connection is
taken out with its tokens held back, probed with backoff (model_info: no document is sent to probe) and
rejoins when it answers with the same weights. Only when every host is out, each after more than
`reconnect_retries` episodes or failed probes, does the pool give up, and the run stops cleanly."""

from __future__ import annotations

import logging
import queue
import threading

from adri_pipeline.classification.backends.base import BackendError, NotSent
from adri_pipeline.models.base import ModelMissing, Overloaded, ServerError, ServerUnreachable, TimedOut

log = logging.getLogger("adri_pipeline.classification.backends.served")  # the backend's lines under one name

# requests sent to a host beyond its declared slots (`host*SLOTS`): none. One queued at the server
# kept a slot from idling for the round trip (4 slots at 205 ms per answer, 400 documents: 0.986 of
# capacity against 0.951 without, benchmarks/slot_efficiency.py, 2026-12-02, one run each), but a team
# declares the slots it pays for and shares, and at a real model's seconds per answer the round trip
# is a tenth of that loss
QUEUED_PER_HOST = 0
MAX_PROBE_INTERVAL_S = 30.0  # a host that stays away is asked again at least this often


class HostPool:
    """The servers of one model, one slot token per parallel slot, and which hosts are out: how many
    times in a row each failed (episodes: a drop that took it out, or a failed probe, not the requests
    in flight at that moment) and the tokens held back until it rejoins."""

    def __init__(
        self,
        servers: list,
        slots_per_host: list[int],
        server_name: str,
        model_name: str,
        backoff_s: float,
        reconnect_retries: int,
    ):
        self.servers = servers
        self.hosts = [s.host for s in servers]
        self.slots = sum(slots_per_host)
        self.server_name, self.model_name = server_name, model_name
        self.backoff_s, self.reconnect_retries = backoff_s, reconnect_retries
        self.digest: str | None = None  # the weights the run uses: a returning host must serve them
        self.gave_up: BackendError | None = None
        # one token per parallel slot (plus QUEUED_PER_HOST); a request waits here for a token
        self._tokens: queue.Queue[int] = queue.Queue()
        for index, slots in enumerate(slots_per_host):
            for _ in range(slots + QUEUED_PER_HOST):
                self._tokens.put(index)
        self._lock = threading.Lock()
        self.failures: dict[int, int] = {}  # host index -> consecutive failures (kept after a rejoin)
        self.out: set[int] = set()
        self._parked: dict[int, int] = {}  # host index -> slot tokens held back
        self._timers: list[threading.Timer] = []
        self._dropped_by: dict[int, str] = {}  # host index -> the error that last took it out
        # host index -> how many times it was taken out: an answer clears the host's failures only if
        # its request was sent after the latest take-out (one sent before says nothing of the host now)
        self._takeouts: dict[int, int] = {}
        self._stopping = threading.Event()
        self._closed = False

    # -- slots ------------------------------------------------------------------------------
    def slot(self) -> int:
        """A slot token of a host that is in; tokens of a host that is out are held back for it."""
        while True:
            if self.gave_up is not None:
                raise self.gave_up
            if self._stopping.is_set():
                raise NotSent("the run is stopping")
            try:
                index = self._tokens.get(timeout=0.2)
            except queue.Empty:
                continue
            with self._lock:
                if index not in self.out:
                    return index
                self._parked[index] = self._parked.get(index, 0) + 1

    def put_back(self, index: int) -> None:
        self._tokens.put(index)

    def sent(self, index: int) -> int:
        """A mark for a request about to be sent to host `index`, for `answered`."""
        with self._lock:
            return self._takeouts.get(index, 0)

    def answered(self, index: int, sent: int) -> None:
        """Host `index` answered a request marked `sent`: if it was sent after the host's latest take-out,
        its next drop starts a new count."""
        with self._lock:
            if self._takeouts.get(index, 0) == sent:
                self.failures.pop(index, None)

    def stop(self) -> None:
        """Requests waiting for a slot are not sent (those already at the server finish)."""
        self._stopping.set()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for timer in self._timers:
                timer.cancel()

    # -- hosts that go away -----------------------------------------------------------------
    def _probe_delay(self, failures: int) -> float:
        return min(self.backoff_s * 2**failures, MAX_PROBE_INTERVAL_S)

    def take_out(self, index: int, reason: Exception | None = None) -> None:
        """Out until a probe finds it answering; a host already out is not counted again."""
        with self._lock:
            if index in self.out or self._closed:
                return
            self.out.add(index)
            self._takeouts[index] = self._takeouts.get(index, 0) + 1
            self.failures[index] = self.failures.get(index, 0) + 1
            delay = self._probe_delay(self.failures.get(index, 1))
            if reason is not None:
                log.warning(
                    "%s dropped the request (%s); its documents go to the hosts that answer, and it is "
                    "asked again in %.1f s",
                    self.hosts[index],
                    reason,
                    delay,
                )
            if reason is not None:
                self._dropped_by[index] = f"{type(reason).__name__}: {reason}"
            self._give_up_if_all_out(self._dropped_by.get(index, ""))
            self._schedule_probe(index, delay)

    def _schedule_probe(self, index: int, delay: float) -> None:
        timer = threading.Timer(delay, self._probe, args=(index,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def _probe(self, index: int) -> None:
        """model_info: the host answers with the same weights -> it rejoins with its slot tokens."""
        if self._closed or self.gave_up:
            return
        server = self.servers[index]
        try:
            info = server.model_info(self.model_name)
            same = (info.digest or "") == (self.digest or "")
        except (ServerUnreachable, TimedOut, ServerError, Overloaded, ModelMissing) as exc:
            with self._lock:
                self.failures[index] = self.failures.get(index, 0) + 1
                # the error that took the host out, then the probe's: the same words whichever came last
                self._give_up_if_all_out(
                    "; ".join(filter(None, [self._dropped_by.get(index), f"probe: {type(exc).__name__}: {exc}"]))
                )
                if not self.gave_up:
                    self._schedule_probe(index, self._probe_delay(self.failures[index]))
            return
        if not same:
            log.error(
                "%s came back serving other weights of %s (%s, the run uses %s): it stays out of this run",
                self.hosts[index],
                self.model_name,
                info.digest,
                self.digest,
            )
            with self._lock:  # never asked again: with every other host out too, the run stops
                self.failures[index] = self.reconnect_retries + 1
                self._give_up_if_all_out(f"{self.hosts[index]} came back serving other weights")
            return
        with self._lock:
            self.out.discard(index)
            for _ in range(self._parked.pop(index, 0)):
                self._tokens.put(index)
        log.warning("%s answers again; it rejoins the run", self.hosts[index])

    def _give_up_if_all_out(self, reason: str = "") -> None:
        """Under the lock: every host out, each past its budget -> the pool gives up (everything answered is kept)."""
        if len(self.out) < len(self.servers) or self.gave_up:
            return
        if all(self.failures.get(i, 0) > self.reconnect_retries for i in range(len(self.servers))):
            hosts = ", ".join(self.hosts)
            self.gave_up = BackendError(
                f"{self.server_name} at {hosts} went away during the run{f' ({reason})' if reason else ''}; "
                f"it did not come back after {self.reconnect_retries} retries. Everything answered so far is "
                "saved: restart the server and rerun to continue"
            )
