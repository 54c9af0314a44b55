"""The gate's plumbing, apart from its decisions: the record log it writes to, the queues its threads work
off the caller's path (shadow samples, log records), the lanes that bound calls at a mirror, the quotas
that bound calls per decision point, and how answers are logged."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Protocol

logger = logging.getLogger("adri_pipeline.mirror.gate")  # the gate's lines under one name, whichever module writes them

TASK_RECORD = "_task"
CONTROL_LANE_WORKERS = 4
LOG_QUEUE_MIN = 10_000  # log records waiting for the log's thread before they are counted as lost
# every outcome the gate writes in a decision record (gate.py), and those of a task record
# (Gate.task_finished): a log line with another is quarantined when read (shadow_log.read_log)
DECISION_OUTCOMES = frozenset(
    {
        "agree",
        "disagree",
        "confident",
        "low_confidence",
        "advisory",
        "veto",
        "no_veto",
        "would_grant",
        "other_direction",
        "timeout",
        "mirror_error",
        "mirror_busy",
        "mirror_drifted",
        "quota_exhausted",
        "invalid_answer",
        "invalid_confidence",
        "invalid_option",
        "rule_invalid_option",
        "dropped_queue_full",
        "no_answer",
    }
)  # no_answer: logs written before the failures had names of their own
TASK_OUTCOMES = frozenset({"controls_on", "controls_off"})


class RecordLog(Protocol):
    """Where the gate's records go (ShadowLog). The gate hands them over redacted with its own
    configuration's redactor and says so (`redacted=True`), so the log does not redact them again."""

    def write(self, record: dict, *, redacted: bool = False) -> None: ...


def _serve(work: queue.Queue, handle, lost: str) -> None:
    """A worker thread's loop: each item handled until the None that stops it; a fault is logged as
    `lost` and never reaches the caller who queued the item."""
    while True:
        item = work.get()
        try:
            if item is None:
                return
            handle(item)
        except Exception:  # noqa: BLE001 - the caller's decision was taken already
            logger.exception(lost)
        finally:
            work.task_done()


class WorkQueue:
    """A bounded queue and the threads that work it, so that what the caller hands over (a shadow sample
    to ask, a record to write) never runs on the caller's path; `offer` never waits: with the queue full
    the caller is told, and counts the item as dropped rather than block a decision."""

    def __init__(self, handle: Callable, size: int, threads: int, lost: str, name: str | None = None):
        self._queue: queue.Queue = queue.Queue(maxsize=size)
        self._threads = [
            threading.Thread(target=_serve, args=(self._queue, handle, lost), daemon=True, name=name)
            for _ in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def offer(self, item) -> bool:
        """Queue `item` if there is room; False when the queue is full."""
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            return False
        return True

    def put(self, item) -> None:
        """Queue `item`, waiting for room (an item that must not be lost, off the decision path)."""
        self._queue.put(item)

    @property
    def busy(self) -> bool:
        """Whether an item is queued or still being handled."""
        return self._queue.unfinished_tasks > 0

    def close(self, timeout_s: float = 5.0) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=timeout_s)


class Lane:
    """Worker threads and a bound on calls at the mirror, answered or not: a hung mirror holds at most
    this many (a call that timed out keeps its worker until it returns); past it the rule decides at
    once ("mirror_busy") instead of queueing calls that would all fire when the mirror recovers."""

    def __init__(self, workers: int, name: str):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._in_flight = threading.BoundedSemaphore(workers)

    def submit(self, call: Callable, request) -> Future | None:
        """`call(request)` on one of the lane's workers; None when every worker holds a call already."""
        if not self._in_flight.acquire(blocking=False):
            return None
        try:
            future = self._pool.submit(call, request)
        except BaseException:
            self._in_flight.release()
            raise
        future.add_done_callback(lambda _: self._in_flight.release())
        return future

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Quotas:
    """Calls at the mirror per decision point in the last minute, held to each point's quota: past it the
    rule decides ("quota_exhausted"), so a busy point cannot run up the mirror's bill."""

    WINDOW_S = 60

    def __init__(self, names):
        self._calls: dict[str, deque] = {name: deque() for name in names}
        self._lock = threading.Lock()

    def add(self, names) -> None:
        """Points a reloaded configuration brings: each starts with no calls counted."""
        with self._lock:
            for name in names:
                self._calls.setdefault(name, deque())

    def take(self, name: str, per_minute: int) -> bool:
        """One call for `name` if its quota has room; False when it has none."""
        now = time.monotonic()
        with self._lock:
            calls = self._calls[name]
            while calls and now - calls[0] > self.WINDOW_S:
                calls.popleft()
            if len(calls) >= per_minute:
                return False
            calls.append(now)
            return True


def _as_logged(answer):
    return None if answer is None else answer if isinstance(answer, str) else str(answer)
