"""A loopback HTTP server that speaks Ollama's API and the OpenAI chat-completions API (as
llama-server and vLLM do), so tests drive the real `ollama` and `openai` clients.

Asked for log-probabilities (`logprobs`), a chat answers one token with `next_token(request) ->
{token: logprob}` as its top log-probabilities, in each API's shape; with `next_token` None the
server answers without them, as a server that does not support them does.

Chat answers come from `script` (a list consumed in order: dicts with status / content / delay / error, or
`drop` to close the connection without answering, as a server dying mid-request does) and, when the script is
empty, from `responder(request) -> content`. Every request is recorded. Can run in-process (`ModelServerStub`)
or as a subprocess (`python -m ... PORT`) for kill tests.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIGEST = "sha256:" + "ab" * 32


class ModelServerStub:
    def __init__(
        self, models=("qwen-test:latest",), responder=None, delay: float = 0.0, slots: int | None = None, port: int = 0
    ):
        self.models = list(models)
        self.loaded: set[str] = set()
        self.script: list[dict] = []
        self.responder = responder or (lambda request: "{}")
        self.next_token = None  # request -> {token: logprob}: the top log-probabilities it returns
        self.size = 1  # the model's size in bytes as /api/tags lists it
        self.delay = delay
        # the server's parallel slots (OLLAMA_NUM_PARALLEL): a chat waits for a free one, as in Ollama
        self.slots = threading.BoundedSemaphore(slots) if slots else None
        self.in_flight = 0  # chat requests received and not yet answered
        self.most_in_flight = 0  # the most at once
        self._flight_lock = threading.Lock()
        self.fail_after: int | None = None  # answer 404 to every chat after this many (model removed)
        self.drop_after: int | None = None  # drop every chat after this many (server dying)
        self.requests: list[tuple[str, dict]] = []
        self.props: dict | None = None  # llama-server's /props (e.g. {"model_path": ...}); None = 404
        self.reject_json_schema = False  # a server without JSON Schema mode answers 400 to it
        self.lock = threading.Lock()
        # the handler class ThreadingHTTPServer instantiates per request, bound to this stub
        handler = type("Handler", (_StubHandler,), {"stub": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def knows(self, model: str) -> bool:
        return model in self.models or f"{model}:latest" in self.models

    def _record(self, path: str, request: dict) -> None:
        with self.lock:
            self.requests.append((path, request))

    def _next_step(self, request: dict) -> dict:
        with self.lock:
            if self.fail_after is not None and len(self.chats()) > self.fail_after:
                return {"status": 404, "error": "model 'qwen-test' not found"}
            if self.drop_after is not None and len(self.chats()) > self.drop_after:
                return {"drop": True}
            if self.script:
                return self.script.pop(0)
        if "messages" in request and "format" not in request:  # an OpenAI request: the responder reads `format`
            request = {**request, "format": _schema_of(request)}
        return {"content": self.responder(request)}

    def _top_logprobs(self, request: dict) -> dict[str, float] | None:
        if not request.get("logprobs") or self.next_token is None:
            return None
        top = self.next_token(request)
        return dict(sorted(top.items(), key=lambda kv: -kv[1])[: int(request.get("top_logprobs") or 1)])

    def chats(self) -> list[dict]:
        """Chat requests of either API; an OpenAI one also carries its schema as `format`, as Ollama's does."""
        return [
            r if path == "/api/chat" else {**r, "format": _schema_of(r)}
            for path, r in self.requests
            if path in ("/api/chat", "/v1/chat/completions")
        ]

    def __enter__(self) -> "ModelServerStub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class _StubHandler(BaseHTTPRequestHandler):
    """One request to a ModelServerStub: the stub it answers for is a class attribute, set per stub."""

    stub: ModelServerStub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else ~40 ms per answer from delayed ACKs

    def log_message(self, *args):
        pass

    def _send(self, status: int, payload: dict):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.stub._record(self.path, {})
        if self.path == "/api/tags":
            return self._send(
                200,
                {
                    "models": [
                        {"name": m, "model": m, "digest": DIGEST, "size": self.stub.size} for m in self.stub.models
                    ]
                },
            )
        if self.path == "/api/ps":
            return self._send(
                200,
                {
                    "models": [
                        {"name": m, "model": m, "digest": DIGEST, "size": 1, "size_vram": 1}
                        for m in sorted(self.stub.loaded)
                    ]
                },
            )
        if self.path == "/api/version":
            return self._send(200, {"version": "0.12.0-stub"})
        if self.path == "/v1/models":
            return self._send(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": m.removesuffix(":latest"),
                            "object": "model",
                            "created": int(time.time()),
                            "owned_by": "stub",
                            "meta": {"size": 1, "n_params": 270_000_000},
                        }
                        for m in self.stub.models
                    ],
                },
            )
        if self.path == "/props" and self.stub.props is not None:
            return self._send(200, self.stub.props)
        self._send(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        self.stub._record(self.path, request)
        model = request.get("model", "")
        if self.path in ("/api/chat", "/api/generate", "/api/show") and not self.stub.knows(model):
            return self._send(404, {"error": f"model '{model}' not found"})
        if self.path == "/api/show":
            family = re.match(r"[a-z]+[0-9]*", model).group(0)  # qwen2.5:7b -> qwen2, gemma3:4b -> gemma3
            return self._send(200, {"modelfile": "", "details": {"family": family}, "model_info": {}})
        if self.path == "/v1/chat/completions":
            return self._openai_chat(request)
        if self.path == "/api/generate":
            if request.get("keep_alive") in (0, "0", "0s"):
                self.stub.loaded.discard(model)
            else:
                self.stub.loaded.add(model)
            return self._send(200, {"model": model, "response": "", "done": True})
        if self.path == "/api/chat":
            step = self._take_step(request, lambda message: {"error": message})
            if step is None:
                return
            self.stub.loaded.add(model)
            top = self.stub._top_logprobs(request)
            return self._send(
                200,
                {
                    "model": model,
                    "created_at": "2026-11-29T00:00:00Z",
                    "message": {"role": "assistant", "content": next(iter(top)) if top else step["content"]},
                    "done": True,
                    "done_reason": "stop",
                    "total_duration": 2_000_000,
                    "load_duration": 0,
                    "prompt_eval_count": 321,
                    "prompt_eval_duration": 1_000_000,
                    "eval_count": 123,
                    "eval_duration": 1_000_000,
                }
                | ({"logprobs": [_token_logprobs(top)]} if top else {}),
            )
        self._send(404, {"error": "not found"})

    def _take_step(self, request: dict, error_body) -> dict | None:
        """The next scripted step, after its delay in a slot; None when it was answered here
        (a dropped connection, an error status in the API's own error shape)."""
        step = self.stub._next_step(request)
        with self.stub._flight_lock:
            self.stub.in_flight += 1
            self.stub.most_in_flight = max(self.stub.most_in_flight, self.stub.in_flight)
        try:
            with self.stub.slots or _nothing():
                time.sleep(step.get("delay", self.stub.delay))
        finally:
            with self.stub._flight_lock:
                self.stub.in_flight -= 1
        if step.get("drop"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        if step.get("status", 200) != 200:
            self._send(step["status"], error_body(step.get("error", "error")))
            return None
        return step

    def _openai_chat(self, request: dict):
        model = request.get("model", "")
        if not self.stub.knows(model):
            return self._send(404, {"error": {"message": f"model '{model}' not found", "type": "not_found_error"}})
        if self.stub.reject_json_schema and (request.get("response_format") or {}).get("type") == "json_schema":
            return self._send(
                400,
                {"error": {"message": "response_format json_schema is not supported", "type": "invalid_request_error"}},
            )
        step = self._take_step(request, lambda message: {"error": {"message": message}})
        if step is None:
            return
        top = self.stub._top_logprobs(request)
        return self._send(
            200,
            {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": step.get("finish_reason", "stop"),
                        "message": {"role": "assistant", "content": next(iter(top)) if top else step["content"]},
                        "logprobs": {"content": [_token_logprobs(top)]} if top else None,
                    }
                ],
                "usage": {"prompt_tokens": 321, "completion_tokens": 123, "total_tokens": 444},
                "timings": {"prompt_ms": 1.0, "predicted_ms": 1.0, "cache_n": 0},
            },
        )


def _token_logprobs(top: dict[str, float]) -> dict:
    """The generated token (the most likely) with its top log-probabilities, as both APIs write it."""
    token, logprob = next(iter(top.items()))
    return {
        "token": token,
        "logprob": logprob,
        "bytes": None,
        "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in top.items()],
    }


def _schema_of(request: dict) -> dict | str | None:
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return response_format["json_schema"]["schema"]
    return "json" if response_format else None


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main() -> None:
    """Subprocess mode: a stub that answers from an echo of the embedded backend's style."""
    from loopback.fakes import answer_from_request

    port_file, delay = sys.argv[1], float(sys.argv[2])
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    stub = ModelServerStub(responder=answer_from_request, delay=delay, port=port)
    with stub:
        with open(port_file, "w") as f:
            f.write(stub.host)
        stub.thread.join()


if __name__ == "__main__":
    main()
