"""`adri ui` (`make ui`): the Dagster UI on loopback, that stops whole on SIGTERM or Ctrl+C.

`dagster dev` shuts its webserver and daemon down only on a KeyboardInterrupt. A SIGTERM killed it
alone and left both serving; started in the background (where the shell ignores SIGINT and the
child inherits that), it ignored Ctrl+C as well: stopping the UI took a SIGKILL of five processes.
Here `dagster dev` runs in a session of its own with SIGINT restored, and either signal reaching
this process is passed to that whole session as SIGINT, which every Dagster process there takes as
"shut down"; what is still running after `GRACE_SECONDS` is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from adri_pipeline.dagster_instance import LOCAL_HOME

GRACE_SECONDS = 10.0
LOCATION_MODULE = "adri_pipeline.definitions"


def _sigint_restored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def dagster_dev_command(port: int) -> list[str]:
    """The checkout's workspace.yaml (the code location as the deployment names it, so the run history
    stays one location's), else the code location's module (an installed wheel)."""
    dagster = Path(sys.executable).parent / "dagster"
    workspace = Path.cwd() / "workspace.yaml"
    location = ["-w", str(workspace)] if workspace.exists() else ["-m", LOCATION_MODULE]
    return [str(dagster), "dev", *location, "-h", "127.0.0.1", "-p", str(port)]


def serve(port: int, dagster_home: Path | None = None) -> int:
    """Run `dagster dev` on 127.0.0.1:`port` until it ends or this process is told to stop; its
    instance in DAGSTER_HOME, else `.dagster_home` in the current folder. Returns its exit code, or
    143 / 130 when SIGTERM / Ctrl+C stopped it."""
    home = Path(dagster_home or os.environ.get("DAGSTER_HOME") or Path.cwd() / LOCAL_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    print(f"Dagster UI on http://127.0.0.1:{port} (instance in {home}); Ctrl+C or SIGTERM stops it", file=sys.stderr)
    child = subprocess.Popen(
        dagster_dev_command(port),
        env=os.environ | {"DAGSTER_HOME": str(home)},
        start_new_session=True,
        preexec_fn=_sigint_restored,
    )
    stopped_by = None
    try:
        return child.wait()
    except KeyboardInterrupt as stop:  # stopping.install_stop_handlers: SIGTERM says so
        stopped_by = 143 if stop.args == ("SIGTERM",) else 130
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # one stop: a second signal must not cut the wait short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _signal_session(child.pid, signal.SIGINT)
    try:
        child.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        print(f"dagster dev still running {GRACE_SECONDS:.0f} s after the stop: killed", file=sys.stderr)
    _signal_session(child.pid, signal.SIGKILL)  # whatever of its session outlived it
    child.wait()
    return stopped_by


def _signal_session(session: int, signum: int) -> None:
    try:
        os.killpg(session, signum)
    except ProcessLookupError:  # the whole session has ended
        pass
