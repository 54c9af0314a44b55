"""A loopback HTTP server that speaks Ollama's API, so tests drive the real `ollama` client.

Chat answers come from `script` (a list consumed in order: dicts with status / content / delay /
error, or `drop` to close the connection without answering, as a server dying mid-request does) and, when the script is empty, from `responder(request) -> content`. Every request is
recorded. Can run in-process (`OllamaStub`) or as a subprocess (`python -m ... PORT`) for kill tests.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIGEST = "sha256:" + "ab" * 32


class OllamaStub:
    def __init__(self, models=("qwen-test:latest",), responder=None, delay: float = 0.0, slots: int | None = None,
                 port: int = 0):
        self.models = list(models)
        self.loaded: set[str] = set()
        self.script: list[dict] = []
        self.responder = responder or (lambda request: "{}")
        self.delay = delay
        # the server's parallel slots (OLLAMA_NUM_PARALLEL): a chat waits for a free one, as in Ollama
        self.slots = threading.BoundedSemaphore(slots) if slots else None
        self.fail_after: int | None = None  # answer 404 to every chat after this many (model removed)
        self.drop_after: int | None = None  # drop every chat after this many (server dying)
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
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
                stub._record(self.path, {})
                if self.path == "/api/tags":
                    return self._send(200, {"models": [
                        {"name": m, "model": m, "digest": DIGEST, "size": 1} for m in stub.models]})
                if self.path == "/api/ps":
                    return self._send(200, {"models": [
                        {"name": m, "model": m, "digest": DIGEST, "size": 1, "size_vram": 1}
                        for m in sorted(stub.loaded)]})
                if self.path == "/api/version":
                    return self._send(200, {"version": "0.12.0-stub"})
                self._send(404, {"error": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                stub._record(self.path, request)
                model = request.get("model", "")
                if self.path in ("/api/chat", "/api/generate", "/api/show") and not stub.knows(model):
                    return self._send(404, {"error": f"model '{model}' not found"})
                if self.path == "/api/show":
                    return self._send(200, {"modelfile": "", "details": {"family": "qwen"}, "model_info": {}})
                if self.path == "/api/generate":
                    if request.get("keep_alive") in (0, "0", "0s"):
                        stub.loaded.discard(model)
                    else:
                        stub.loaded.add(model)
                    return self._send(200, {"model": model, "response": "", "done": True})
                if self.path == "/api/chat":
                    step = stub._next_step(request)
                    if stub.slots:
                        with stub.slots:
                            time.sleep(step.get("delay", stub.delay))
                    else:
                        time.sleep(step.get("delay", stub.delay))
                    if step.get("drop"):
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if step.get("status", 200) != 200:
                        return self._send(step["status"], {"error": step.get("error", "error")})
                    stub.loaded.add(model)
                    return self._send(200, {
                        "model": model, "created_at": "2026-11-29T00:00:00Z",
                        "message": {"role": "assistant", "content": step["content"]},
                        "done": True, "done_reason": "stop", "total_duration": 2_000_000,
                        "load_duration": 0, "prompt_eval_count": 321, "prompt_eval_duration": 1_000_000,
                        "eval_count": 123, "eval_duration": 1_000_000,
                    })
                self._send(404, {"error": "not found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
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
        return {"content": self.responder(request)}

    def chats(self) -> list[dict]:
        return [r for path, r in self.requests if path == "/api/chat"]

    def __enter__(self) -> "OllamaStub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    """Subprocess mode: a stub that answers from an echo of the embedded backend's style."""
    from adri_pipeline_tests.fakes import answer_from_request

    port_file, delay = sys.argv[1], float(sys.argv[2])
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    stub = OllamaStub(responder=answer_from_request, delay=delay, port=port)
    with stub:
        with open(port_file, "w") as f:
            f.write(stub.host)
        stub.thread.join()


if __name__ == "__main__":
    main()
