"""The gate's plumbing, apart from its decisions: the record log it writes to, the worker loop of its
threads, the lanes that bound calls at a mirror, and how answers are logged."""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

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


class _Lane:
    """Worker threads and a bound on calls at the mirror, answered or not: a hung mirror holds at most
    this many (a call that timed out keeps its worker until it returns); past it the rule decides at
    once ("mirror_busy") instead of queueing calls that would all fire when the mirror recovers."""

    def __init__(self, workers: int, name: str):
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self.in_flight = threading.BoundedSemaphore(workers)


def _as_logged(answer):
    return None if answer is None else answer if isinstance(answer, str) else str(answer)
