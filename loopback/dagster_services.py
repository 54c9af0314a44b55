"""A Dagster deployment on loopback for a test: `dagster-daemon` and `dagster-webserver` over the project's
workspace, each in a session of its own (their code servers are their children), stopped together;
and the webserver's GraphQL API, the one the UI uses."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from loopback.systemone_servers import free_port

BIN = Path(sys.executable).parent


def wait_for(condition, timeout_s: float, what: str, every_s: float = 0.5):
    """`condition()`'s first true value, polled every `every_s` seconds for at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    """The `data` of one GraphQL request to the webserver at `url`; an error in the answer raises."""
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query, "variables": variables or {}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.load(response)
    if answer.get("errors"):
        raise AssertionError(f"GraphQL errors: {answer['errors']}")
    return answer["data"]


def _answering(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}/server_info", timeout=2).status == 200
    except OSError:
        return False


def _stop(services: list[subprocess.Popen]) -> None:
    for service in services:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(service.pid, signal.SIGTERM)
    for service in services:
        try:
            service.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(service.pid, signal.SIGKILL)
            service.wait()


@contextlib.contextmanager
def dagster_services(workspace: Path, env: dict[str, str], cwd: Path, logs: Path, timeout_s: float = 180):
    """The daemon and the webserver with `env` (DAGSTER_HOME and the ADRI_* settings), their output in
    `logs`; yields the webserver's URL once it answers."""
    port = free_port()
    logs.mkdir(parents=True, exist_ok=True)
    commands = {
        "daemon": [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)],
        "webserver": [str(BIN / "dagster-webserver"), "-w", str(workspace), "-h", "127.0.0.1", "-p", str(port)],
    }
    services = []
    try:
        for name, command in commands.items():
            with open(logs / f"{name}.log", "w") as log:
                services.append(
                    subprocess.Popen(
                        command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                    )
                )
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answering(url), timeout_s, "the Dagster webserver", every_s=1)
        yield url
    finally:
        _stop(services)
