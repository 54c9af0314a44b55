"""uvicorn for `adri routing serve`: the app of routing/serve.py on a port, with an HTTP protocol that
answers what is not HTTP as JSON too. uvicorn's h11 already refuses a request line, a header or a
Content-Length it cannot read (non-numeric, negative) with 400, and closes; here that 400 carries a
JSON reason like every other error, and a client that has not finished its headers within
HEADERS_TIMEOUT_S gets 408 and is let go (uvicorn alone waits for it)."""

from __future__ import annotations

import asyncio
import json
import socket

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADERS_TIMEOUT_S = 10.0
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _raw_json(status: str, error_type: str, message: str) -> bytes:
    body = json.dumps({"detail": {"error_type": error_type, "message": message}}).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode() + body


class JsonErrorsH11(H11Protocol):
    """uvicorn's h11 protocol whose own refusals are JSON, with a deadline for the headers."""

    headers_timeout_s = HEADERS_TIMEOUT_S

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._headers_deadline = asyncio.get_running_loop().call_later(self.headers_timeout_s, self._too_slow)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None:
            self._headers_deadline.cancel()

    def connection_lost(self, exc) -> None:
        self._headers_deadline.cancel()
        super().connection_lost(exc)

    def _too_slow(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            self.transport.write(
                _raw_json(
                    "408 Request Timeout",
                    "request_timeout",
                    f"The request's headers did not arrive within {self.headers_timeout_s:.0f} s.",
                )
            )
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        self.transport.write(
            _raw_json(
                "400 Bad Request",
                "invalid_request_error",
                "Not a valid HTTP/1.1 request: its request line, a header or its "
                "Content-Length (a non-negative number) could not be read.",
            )
        )
        self.transport.close()


def warn_if_open(host: str, key: str | None) -> str | None:
    """The warning for a server reachable from other machines without a key, or None."""
    if key or host in LOOPBACK or host.startswith("127."):
        return None
    return (
        f"warning: serving on {host} without a key: anyone who reaches this machine's port can ask the "
        "model and read its drift counters; pass --key-env VAR (clients then send Authorization: Bearer) "
        "or listen on 127.0.0.1 behind your own proxy"
    )


def server(
    app,
    host: str = "127.0.0.1",
    port: int = 8000,
    headers_timeout_s: float = HEADERS_TIMEOUT_S,
) -> tuple[uvicorn.Server, socket.socket]:
    """A uvicorn server for `app` and its bound socket (port 0 picks a free one): the caller reads the
    address, then runs `server.run(sockets=[sock])`."""
    protocol = type("Protocol", (JsonErrorsH11,), {"headers_timeout_s": headers_timeout_s})
    config = uvicorn.Config(
        app, http=protocol, lifespan="off", log_level="warning", access_log=False, timeout_keep_alive=30
    )
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return uvicorn.Server(config), sock
