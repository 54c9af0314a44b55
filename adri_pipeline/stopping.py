"""How a run is told to stop: Ctrl+C and SIGTERM both raise KeyboardInterrupt in the main thread (the
SIGTERM one says "SIGTERM", so the CLI exits 143 rather than 130).

Inside a run (`one_stop`), only the first signal raises: the ones after it are noted and otherwise
ignored, so a burst of Ctrl+C cannot interrupt the stop's own publishing (four Ctrl+C within a second
left the ledger written but no results, snapshot or runs row). One exception: while the stop waits
for answers already at the model (`second_signal_abandons`), the second signal gives them up.

DuckDB checks for signals while it runs a query and, when one lands there, swallows the
KeyboardInterrupt and raises `RuntimeError("Query interrupted")` instead (seen in CI: a Ctrl+C during a
ledger commit ended the run with a traceback and exit 1 instead of results and exit 130).
`warehouse/` gives the interrupt back with `interrupt_from`, naming the signal recorded here.
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Iterator

_last_signal: str | None = None
_in_run = False  # inside one_stop: a run that writes its results however it ends
_stopping = False  # that run has been told to stop
_waiting = False  # the stop waits for answers already at the model
_depth = 0  # one_stop blocks entered and not yet left


def _interrupt(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt("SIGTERM") if signum == signal.SIGTERM else KeyboardInterrupt()


def _stop(signum, frame):
    global _last_signal, _stopping, _waiting
    name = signal.Signals(signum).name
    if _stopping and _waiting:
        _waiting = False
        raise _interrupt(signum)
    if _stopping:
        sys.stderr.write(
            f"{name}: already stopping, writing the results of what was done "
            "(kill -9 loses nothing if you cannot wait)\n"
        )
        return
    _last_signal, _stopping = name, _in_run
    raise _interrupt(signum)


def install_stop_handlers() -> None:
    """Ctrl+C and SIGTERM (systemd, Docker, Kubernetes, Dagster's run termination) stop a run the same
    way: no new documents, results and snapshot for what was done. Installed explicitly, so a process
    started in the background with SIGINT ignored still stops on Ctrl+C."""
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)


@contextmanager
def one_stop() -> Iterator[None]:
    """A run that writes its results however it ends: the first signal stops it, later ones are only noted,
    while it writes them and after (its program then only reports and leaves). A run inside a run (the rest of
    a file after its first documents, classify_corpus_file) shares the outer one's stop."""
    global _depth, _in_run, _stopping, _waiting
    _depth += 1
    if _depth == 1:
        _in_run, _stopping, _waiting = True, False, False
    try:
        yield
    finally:
        _depth -= 1
        if not _depth:
            # a run that was stopped leaves its program only reporting what was done: signals from here on
            # are noted too. Reset here and set again by the caller, a burst of Ctrl+C whose last signal
            # fell between the two escaped as a traceback (a fresh clone's `make test`, 2026-12-04)
            _in_run, _waiting = _stopping, False


@contextmanager
def second_signal_abandons() -> Iterator[None]:
    """While a stop waits for the answers already at the model, a second Ctrl+C or SIGTERM raises
    (stop waiting, redo them next run)."""
    global _waiting
    _waiting = True
    try:
        yield
    finally:
        _waiting = False


def interrupt_from(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt a database error stands for, if it is DuckDB's "Query interrupted"."""
    import duckdb

    if isinstance(exc, duckdb.InterruptException) or (type(exc) is RuntimeError and str(exc) == "Query interrupted"):
        return KeyboardInterrupt("SIGTERM") if _last_signal == "SIGTERM" else KeyboardInterrupt()
    return None
