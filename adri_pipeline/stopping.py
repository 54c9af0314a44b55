"""How a run is told to stop: Ctrl+C and SIGTERM both raise KeyboardInterrupt in the main thread (the
SIGTERM one says "SIGTERM", so the CLI exits 143 rather than 130).

DuckDB checks for signals while it runs a query and, when one lands there, swallows the
KeyboardInterrupt and raises `RuntimeError("Query interrupted")` instead (seen in CI: a Ctrl+C during a
ledger commit ended the run with a traceback and exit 1 instead of results and exit 130).
`warehouse/` gives the interrupt back with `interrupt_from`, naming the signal recorded here.
"""

from __future__ import annotations

import signal
import sys

_last_signal: str | None = None


def install_stop_handlers() -> None:
    """Ctrl+C and SIGTERM (systemd, Docker, Kubernetes, Dagster's run termination) stop a run the same
    way: no new documents, results and snapshot for what was done; signals after the first are noted
    and otherwise ignored, so the results are written once. Installed explicitly, so a process
    started in the background with SIGINT ignored still stops on Ctrl+C."""

    global _last_signal
    _last_signal = None

    def stop(signum, frame):
        global _last_signal
        if _last_signal is not None:  # a burst of Ctrl+C must not interrupt the stop's own publishing
            sys.stderr.write(f"{signal.Signals(signum).name}: already stopping, writing the results of what "
                             "was done (kill -9 loses nothing if you cannot wait)\n")
            return
        _last_signal = signal.Signals(signum).name
        raise KeyboardInterrupt("SIGTERM") if signum == signal.SIGTERM else KeyboardInterrupt()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def interrupt_from(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt a database error stands for, if it is DuckDB's "Query interrupted"."""
    import duckdb

    if isinstance(exc, duckdb.InterruptException) or (
            type(exc) is RuntimeError and str(exc) == "Query interrupted"):
        return KeyboardInterrupt("SIGTERM") if _last_signal == "SIGTERM" else KeyboardInterrupt()
    return None
