"""`adri routing serve`: a fitted, calibrated candidate on the System One wire (`POST /v1/systemone`,
`GET /v1/models`), so that a platform team deploys what it benchmarked and any System One client —
typesafe-sdk, the mirror gate, this benchmark's `jev:<url>` — reaches it. It is built to pass every
requirement of jevcompat's SPEC, MUST and SHOULD (`jevcompat test URL`):

- the request is checked against the published schema (contracts/jev/schemas); a bad one
  gets 422 `{"detail": [{"loc": ["body", ...], "msg", "type"}]}`, other errors `{"detail":
  {"error_type", "message"}}`, never a 5xx;
- each question is answered on its own (its id, its neighbours and its position change nothing),
  except the JEV design's D4 — one yes/no per candidate intent ("A mensagem pede: ..."), which the
  candidate answers as a set, as it was benchmarked; per turn, the latency is then that one request;
- the state may be text, an object or an array (objects and arrays are read as their JSON text); a
  state not written by the project's serializer is read whole as the message;
- confidences follow the spec's reference formulas (jev/contract.answer_from);
- with a key (`--key-env VAR`), `Authorization: Bearer KEY` is required (401 otherwise);
- an embedded candidate is watched for drift (jev/drift.py): `x_drift` in each response,
  counters at `GET /v1/drift`, abstention while the traffic is unlike the calibration split.
"""

from __future__ import annotations

import hmac
import json
import socket
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from adri_pipeline.jev.contract import DEFAULT_MODEL, NO, YES, answer_from, options_of, schema_errors, text_of
from adri_pipeline.jev.drift import DriftMonitor
from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline.routing.candidates import ABSTAIN_OPTIONS, SCOPE_OPTIONS, SESSION_OPTIONS

D4_PREFIX = "A mensagem pede:"  # jev/serialize.to_request's D4 questions
MAX_BODY = 32 * 1024 * 1024


def task_of(question: dict) -> str:
    """Which calibrated temperature answers a question, from what it asks (never from its id)."""
    if question["type"] == "noul":
        return "D3"
    if question["type"] == "score":
        return "score"
    options = options_of(question)
    if SCOPE_OPTIONS & set(options):
        return "D5"
    if any(o.startswith("retomar_sessao:") or o in SESSION_OPTIONS for o in options):
        return "D2"
    return "D1"


def _is_d4_set(questions: dict) -> bool:
    return len(questions) > 1 and all(
        q["type"] == "noul" and isinstance(q.get("instructions"), str) and q["instructions"].startswith(D4_PREFIX)
        for q in questions.values())


def abstaining(question: dict, answer: dict) -> dict:
    """The answer that leaves the decision to someone else: the question's abstention option (D2
    desambiguar, D1 sem_correspondencia) at probability 1, "nao" to D3's "can route without asking";
    a question without one keeps its answer (the response's x_drift tells the client)."""
    if question["type"] == "noul":
        return answer_from(question, {YES: 0.0, NO: 1.0})
    options = options_of(question)
    option = next((o for o in ABSTAIN_OPTIONS if o in options), None)
    if option is None or question["type"] != "choice":
        return answer
    return answer_from(question, {o: float(o == option) for o in options})


class Answerer:
    """The calibrated candidate behind a lock (its embedder keeps per-decision state). An embedded
    candidate is watched for drift (jev/drift.py): while the messages arriving are unlike the
    calibration split's, it abstains, says so in each response (`x_drift`) and in GET /v1/drift."""

    def __init__(self, calibrated: Calibrated, description: str, drift: DriftMonitor | None = None):
        self.calibrated, self.description = calibrated, description
        self.lock = threading.Lock()
        self.models = [DEFAULT_MODEL, calibrated.name]
        if drift is None and calibrated.familiarity is not None:
            drift = DriftMonitor(calibrated.familiarity.reference)
        self.drift = drift

    def answer(self, body: dict) -> dict:
        state = text_of(body["state"])
        questions = body["questions"]
        with self.lock:
            if _is_d4_set(questions):
                response, _ = self.calibrated.respond({"state": state, "questions": questions}, "D4", count_tokens=True)
                return self._watched(response, questions)
            answers, tokens = {}, 0
            for name, question in questions.items():
                options = options_of(question)
                if len(options) == 1:  # nothing to decide (the spec allows 2 to 255 options; one is answered)
                    answers[name] = answer_from(question, {options[0]: 1.0})
                    continue
                one, _ = self.calibrated.respond({"state": state, "questions": {name: question}}, task_of(question),
                                                 count_tokens=True)
                answers |= one["answers"]
                tokens = max(tokens, one["usage"]["input_tokens"])
        return self._watched({"model": self.calibrated.name, "answers": answers,
                              "usage": {"input_tokens": tokens, "output_tokens": 0}}, questions)

    def _watched(self, response: dict, questions: dict) -> dict:
        """One message observed by the drift monitor (once per request, whatever its questions); while
        drifted, every answer abstains."""
        similarity = self.calibrated.last_familiarity
        if self.drift is None or similarity is None:
            return response
        if self.drift.observe(similarity):
            response["answers"] = {name: abstaining(questions[name], answer)
                                   for name, answer in response["answers"].items()}
        response["x_drift"] = {"drifted": self.drift.drifted, "p_value": self.drift.p_value}
        return response


def _validation_errors(body) -> list[dict]:
    if not isinstance(body, dict):
        return [{"loc": ["body"], "msg": "Input should be a valid object", "type": "dict_type"}]
    return [{"loc": ["body", *path], "msg": message, "type": "value_error"}
            for path, message in schema_errors("request", body)]


class SystemOneHandler(BaseHTTPRequestHandler):
    """POST /v1/systemone and GET /v1/models for one `answerer`, behind an optional bearer `key`
    (make_server sets both on a subclass)."""

    answerer: Answerer
    key: str | None = None
    server_version = "adri-routing-serve"
    protocol_version = "HTTP/1.1"  # keep-alive: a client's next decision reuses the connection

    def setup(self) -> None:
        """No Nagle: headers and body leave as two writes, and with keep-alive the client's delayed
        ACK then held each answer ~40 ms (44 ms per sparrow decision, against 1.7 ms behind
        sparrow-decider's own server)."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, payload) -> None:
        raw = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _error(self, status: int, error_type: str, message: str) -> None:
        self._send(status, {"detail": {"error_type": error_type, "message": message}})

    def _refused(self) -> bool:
        if self.key is None:
            return False
        header = self.headers.get("Authorization") or ""
        given = header[7:].strip() if header.startswith("Bearer ") else ""
        if not given:
            self._error(401, "authentication_error", "Send the key as Authorization: Bearer KEY.")
        elif not hmac.compare_digest(given.encode(), self.key.encode()):
            self._error(401, "authentication_error", "The key is not valid.")
        else:
            return False
        return True

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/drift" and not self._refused():
            self._send(200, self.answerer.drift.counters() if self.answerer.drift else
                       {"drifted": False, "watched": False, "reason": "the candidate does not embed its messages"})
        elif self.path.rstrip("/") != "/v1/models":
            self._error(404, "not_found_error", f"No route {self.path}")
        elif not self._refused():
            today = date.today().isoformat()
            self._send(200, {"models": [{"name": name, "description": self.answerer.description, "release_date": today}
                                        for name in self.answerer.models]})

    def _body(self) -> dict | None:
        """The request's JSON body, or None once an error was sent (route, key, size, JSON, schema)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, MAX_BODY))
        if self.path.rstrip("/") != "/v1/systemone":
            self._error(404, "not_found_error", f"No route {self.path}")
            return None
        if self._refused():
            return None
        if length > MAX_BODY:
            self._error(413, "request_too_large", f"The body is over {MAX_BODY} bytes.")
            return None
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._send(422, {"detail": [{"loc": ["body", getattr(exc, "pos", 0)], "msg": f"JSON decode error: {exc}",
                                         "type": "json_invalid"}]})
            return None
        errors = _validation_errors(body)
        if errors:
            self._send(422, {"detail": errors})
            return None
        return body

    def do_POST(self) -> None:
        body = self._body()
        if body is None:
            return
        if body["model"] not in self.answerer.models:
            self._error(404, "not_found_error", f"Model not served: {body['model']!r}; this server serves "
                                                f"{', '.join(self.answerer.models)}")
            return
        try:
            self._send(200, self.answerer.answer(body))
        except ValueError as exc:  # a question the model cannot take (sparrow: more than 10 levels, say)
            self._send(422, {"detail": [{"loc": ["body", "questions"], "msg": str(exc), "type": "value_error"}]})
        except Exception as exc:  # noqa: BLE001 - said as JSON, never as a dropped connection
            self._error(500, "internal_error", f"{type(exc).__name__}: {exc}")


def make_server(answerer: Answerer, host: str = "127.0.0.1", port: int = 8000, key: str | None = None,
                ) -> ThreadingHTTPServer:
    handler = type("Handler", (SystemOneHandler,), {"answerer": answerer, "key": key})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
