"""`adri ui` (`make ui`) stops whole: the real `dagster dev`, started the way `make ui &` starts it
in a script (SIGINT ignored), stopped by one SIGTERM or SIGINT to the process a user sees."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from loopback.systemone_servers import free_port

ROOT = Path(__file__).resolve().parent.parent
ADRI = Path(sys.executable).parent / "adri"


def _ignore_sigint() -> None:  # what a non-interactive shell does to a command started with `&`
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _serving(port: int, process: subprocess.Popen, timeout: float = 180.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            time.sleep(0.5)
    return False


@pytest.mark.slow  # dagster dev takes 20-40 s to serve on 2 cores; .ci/run runs the slow tests
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_ui_stops_whole_on_one_signal_within_ten_seconds(tmp_path, stop):
    """Failed before (`make ui` ran `dagster dev` itself): SIGTERM killed dagster dev alone and its
    webserver and daemon kept serving; started in the background, SIGINT was ignored."""
    port = free_port()
    process = subprocess.Popen(
        [str(ADRI), "ui", "--port", str(port)],
        cwd=ROOT,
        preexec_fn=_ignore_sigint,
        env=os.environ | {"DAGSTER_HOME": str(tmp_path / "home")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    below: list[psutil.Process] = []
    try:
        assert _serving(port, process), "the UI never answered"
        below = psutil.Process(process.pid).children(recursive=True)
        assert len(below) >= 3  # dagster dev, its webserver, its daemon (and their code servers)
        sent = time.monotonic()
        process.send_signal(stop)
        assert process.wait(timeout=10) == (143 if stop == signal.SIGTERM else 130)
        _, alive = psutil.wait_procs(below, timeout=max(0.0, 10 - (time.monotonic() - sent)))
        assert not alive, f"still running 10 s after {stop.name}: {[p.name() for p in alive]}"
    finally:
        for leftover in [psutil.Process(process.pid), *below] if process.poll() is None else below:
            try:
                leftover.kill()
            except psutil.NoSuchProcess:
                pass
