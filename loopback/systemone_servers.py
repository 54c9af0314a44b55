"""Real System One servers on loopback for the wire tests: sparrow-decider's own server and
`adri routing serve` as processes, jevcompat's reference mock (with faults) in a thread."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def process_server(
    command: list[str], port: int, ready_path: str = "/", timeout_s: float = 120.0, env=None, log: Path | None = None
):
    """Start `command`, wait until http://127.0.0.1:port answers, yield its URL, stop it. `log`: a file
    for its output, for a server that writes more than a pipe holds while nobody reads it."""
    out = log.open("w") if log else subprocess.PIPE
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            if process.poll() is not None:
                said = log.read_text() if log else process.stdout.read()
                raise RuntimeError(f"{command[0]} exited {process.returncode}: {said[-2000:]}")
            try:
                urllib.request.urlopen(url + ready_path, timeout=1)
                break
            except urllib.error.HTTPError:
                break  # it answers (401 when a key is required, 404 where there is no page)
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{command} did not answer on {url} within {timeout_s} s") from None
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
        if log:
            out.close()


@contextlib.contextmanager
def mute_server():
    """A server that takes every connection and never answers a byte (a mirror hung at its host):
    yields its URL."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed: the test is over
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for connection in held:
            connection.close()


def sparrow_server(port: int | None = None):
    port = port or free_port()
    return process_server([str(BIN / "sparrow-decider"), "serve", "--port", str(port)], port)


def adri_serve(
    candidate: str,
    warehouse: Path,
    port: int | None = None,
    key_env: str | None = None,
    env=None,
    flags: tuple[str, ...] = (),
):
    port = port or free_port()
    command = [
        str(BIN / "adri"),
        "routing",
        "serve",
        "--dataset",
        "sample",
        "--candidate",
        candidate,
        "--port",
        str(port),
        "--warehouse",
        str(warehouse),
        *flags,
    ] + (["--key-env", key_env] if key_env else [])
    # it fits the candidate and cross-fits D2 by author (14 authors' turns) before it listens: in CI beside
    # another slow test, the test that waits on it took 9 minutes (2026-12-07); the bound leaves room
    return process_server(command, port, ready_path="/v1/models", timeout_s=1200.0, env=env)


@contextlib.contextmanager
def jevcompat_mock(*faults: str):
    """jevcompat's reference server, breaking the named requirements on purpose."""
    from jevcompat.mock import MockConfig, Running

    with Running(MockConfig(faults=frozenset(faults))) as server:
        yield server.url


@contextlib.contextmanager
def asgi_server(app, headers_timeout_s: float = 10.0):
    """`app` (an `adri routing serve` app, routing/serve.make_app) under real uvicorn on a loopback
    port, as `adri routing serve` runs it, in a thread of this process; yields its URL."""
    import threading

    from adri_pipeline.routing.serve_server import server

    uvicorn_server, sock = server(app, "127.0.0.1", 0, headers_timeout_s)
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uvicorn_server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        uvicorn_server.should_exit = True
        thread.join(15)
        sock.close()
