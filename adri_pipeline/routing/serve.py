"""`adri routing serve`: a fitted, calibrated candidate on the System One wire (`POST /v1/systemone`,
`GET /v1/models`, `GET /v1/drift`), so that a platform team deploys what it benchmarked and any System
One client — typesafe-sdk, the mirror gate, this benchmark's `jev:<url>` — reaches it. An ASGI app
(Starlette) served by uvicorn; `app_factory` builds it for a platform's own server
(`uvicorn 'adri_pipeline.routing.serve:app_factory' --factory`). It is built to pass every
requirement of jevcompat's SPEC, MUST and SHOULD (`jevcompat test URL`):

- the request is validated by a pydantic model of the published schema (contracts/jev/schemas); a
  bad one gets 422 `{"detail": [{"loc": ["body", ...], "msg", "type"}]}` (FastAPI's shape), other
  errors `{"detail": {"error_type", "message"}}`, never a 5xx nor a dropped connection: a body over
  the limit 413, a body slower than READ_TIMEOUT_S 408, a request that is not HTTP 400 (as JSON);
- the state is cut to the candidate's token limit (jev/serialize.fit_tokens) before the model reads
  it, the body limited to BODY_BYTES_PER_TOKEN bytes per token of it, and each answer to a time
  budget: past it, 503 with the reason, and the worker thread gives up the model at its next step;
- each question is answered on its own (its id, its neighbours and its position change nothing),
  except the JEV design's D4 — one yes/no per candidate intent ("A mensagem pede: ..."), which the
  candidate answers as a set, as it was benchmarked; per turn, the latency is then that one request;
- the state may be text, an object or an array (objects and arrays are read as their JSON text); a
  state not written by the project's serializer is read whole as the message;
- confidences follow the spec's reference formulas (jev/contract.answer_from);
- with a key (`--key-env VAR`), `Authorization: Bearer KEY` is required (401 otherwise);
- an embedded candidate is watched for drift (jev/drift.py): `x_drift` in each response,
  counters at `GET /v1/drift`, abstention while the traffic is unlike the calibration split, but for
  the answers a prediction set of one or a team's certified threshold still stands behind (`x_drift.kept`);
- with `--clarify`, conformal prediction sets (`Clarifier`): an unsure D2 choice between two or three
  options becomes `desambiguar`, the options named in `x_prediction_sets`;
- with `--team-calibration`, a team's certified thresholds: a choice below its task's abstains
  (`x_certified`), and the drift monitor compares with the team's turns.
"""

from __future__ import annotations

import hmac
import threading
import time
from dataclasses import dataclass
from datetime import date

import anyio
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adri_pipeline.jev.contract import DEFAULT_MODEL, NO, YES, answer_from, options_of, text_of
from adri_pipeline.jev.drift import DriftMonitor
from adri_pipeline.jev.metrics import conformal_set
from adri_pipeline.jev.request import parse_request
from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline.routing.candidates import ABSTAIN_OPTIONS, SCOPE_OPTIONS, SESSION_OPTIONS

CLARIFYING = "desambiguar"  # D2's option that asks the user
D4_PREFIX = "A mensagem pede:"  # jev/serialize.to_request's D4 questions
DEFAULT_TOKEN_LIMIT = 512  # a candidate that states none (a System One server): the JEV design's smallest context
# a body may carry this many bytes per token of the candidate's limit: 32 KiB at 512 tokens, 16 times a
# state at the limit (about 4 bytes a token) and room for a 255-option question; the sample's largest is 2.5 KB
BODY_BYTES_PER_TOKEN = 64
BUDGET_S = 10.0  # an answer's time budget, from the body read to the response (--budget)
READ_TIMEOUT_S = 10.0  # a body that takes longer to arrive: 408


class OverBudget(Exception):
    """The request's time budget ran out before the model answered."""


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
        for q in questions.values()
    )


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


@dataclass(frozen=True)
class Clarifier:
    """Conformal prediction sets on the wire (`adri routing serve --clarify`): per task, the calibration
    split's conformal quantile (run.choose_thresholds). A choice question's set of one keeps its answer;
    a set of 2..max_options becomes the question's `desambiguar` (the user is asked which of them), an
    empty or larger set abstains (serve.abstaining). Each such question is described in the response's
    `x_prediction_sets` extension: {question: {"options": [...], "coverage": c, "action": "answer" |
    "ask" | "abstain"}}, so a client can name the options in its question."""

    quantiles: dict[str, float]
    coverage: float
    max_options: int = 3

    def apply(self, answers: dict, questions: dict, response: dict) -> None:
        described = {}
        for name, answer in answers.items():
            question = questions[name]
            quantile = self.quantiles.get(task_of(question))
            if question["type"] != "choice" or quantile is None:
                continue
            options = conformal_set(answer["probabilities"], quantile)
            action = "answer" if len(options) == 1 else "ask" if 2 <= len(options) <= self.max_options else "abstain"
            if action == "ask" and CLARIFYING in options_of(question):
                answers[name] = answer_from(question, {o: float(o == CLARIFYING) for o in options_of(question)})
            elif action != "answer":
                answers[name] = abstaining(question, answer)
            described[name] = {"options": options, "coverage": self.coverage, "action": action}
        if described:
            response["x_prediction_sets"] = described


class Answerer:
    """The calibrated candidate behind a lock (its embedder keeps per-decision state). An embedded
    candidate is watched for drift (jev/drift.py): while the messages arriving are unlike the
    calibration split's, it abstains, says so in each response (`x_drift`) and in GET /v1/drift. With a
    `Clarifier`, an unsure choice becomes a clarifying question."""

    def __init__(
        self,
        calibrated: Calibrated,
        description: str,
        drift: DriftMonitor | None = None,
        clarifier: Clarifier | None = None,
        thresholds: dict[str, float] | None = None,
    ):
        self.calibrated, self.description, self.clarifier = calibrated, description, clarifier
        self.thresholds = thresholds or {}  # task -> a team's certified threshold (routing/team_calibration.py)
        self.lock = threading.Lock()
        self.models = [DEFAULT_MODEL, calibrated.name]
        if drift is None and calibrated.familiarity is not None:
            drift = DriftMonitor(calibrated.familiarity.reference)
        self.drift = drift

    def answer(self, body: dict, deadline: float = float("inf")) -> dict:
        """The response to a validated request. Past `deadline` (time.monotonic) it raises OverBudget
        instead: while waiting for the candidate, and between questions, so that a request whose
        client was already told 503 does not keep the candidate from the others."""
        state = text_of(body["state"])
        questions = body["questions"]
        if not self.lock.acquire(timeout=max(0.0, min(deadline - time.monotonic(), threading.TIMEOUT_MAX))):
            raise OverBudget()
        try:
            if _is_d4_set(questions):
                response, _ = self.calibrated.respond({"state": state, "questions": questions}, "D4", count_tokens=True)
                return self._watched(response, questions)
            answers, tokens = {}, 0
            for name, question in questions.items():
                if time.monotonic() > deadline:
                    raise OverBudget()
                options = options_of(question)
                if len(options) == 1:  # nothing to decide (the spec allows 2 to 255 options; one is answered)
                    answers[name] = answer_from(question, {options[0]: 1.0})
                    continue
                one, _ = self.calibrated.respond(
                    {"state": state, "questions": {name: question}}, task_of(question), count_tokens=True
                )
                answers |= one["answers"]
                tokens = max(tokens, one["usage"]["input_tokens"])
            response = {
                "model": self.calibrated.name,
                "answers": answers,
                "usage": {"input_tokens": tokens, "output_tokens": 0},
            }
            if self.clarifier is not None:
                self.clarifier.apply(answers, questions, response)
            self._certified(answers, questions, response)
            return self._watched(response, questions)
        finally:
            self.lock.release()

    def _certified(self, answers: dict, questions: dict, response: dict) -> None:
        """A team's certified thresholds (`--team-calibration`): a choice answered below its task's
        threshold abstains; `x_certified` says, per question, the threshold and whether it was met. A
        question the prediction sets already turned into a question or an abstention is left so."""
        described = response.get("x_prediction_sets", {})
        certified = {}
        for name, answer in answers.items():
            threshold = self.thresholds.get(task_of(questions[name]))
            if (
                threshold is None
                or questions[name]["type"] != "choice"
                or described.get(name, {}).get("action", "answer") != "answer"
            ):
                continue
            met = max(answer["probabilities"].values()) >= threshold
            if not met:
                answers[name] = abstaining(questions[name], answer)
            certified[name] = {"threshold": threshold, "answered": met}
        if certified:
            response["x_certified"] = certified

    def _watched(self, response: dict, questions: dict) -> dict:
        """One message observed by the drift monitor (once per request, whatever its questions); while
        drifted, an answer abstains unless a rule that does not rest on the fit source's calibration
        still stands behind it: a prediction set of one option (`--clarify`) or a team's certified
        threshold met (`--team-calibration`). `x_drift.kept` names those answers."""
        similarity = self.calibrated.last_familiarity
        if self.drift is None or similarity is None:
            return response
        kept = []
        if self.drift.observe(similarity):
            kept = [name for name in response["answers"] if self._still_certified(response, name)]
            response["answers"] = {
                name: answer if name in kept else abstaining(questions[name], answer)
                for name, answer in response["answers"].items()
            }
        response["x_drift"] = {
            "drifted": self.drift.drifted,
            "p_value": self.drift.p_value,
            "martingale": self.drift.martingale.capital,
            "kept": kept,
        }
        return response

    @staticmethod
    def _still_certified(response: dict, name: str) -> bool:
        sets, certified = response.get("x_prediction_sets", {}), response.get("x_certified", {})
        return (sets.get(name, {}).get("action") == "answer" and len(sets[name]["options"]) == 1) or certified.get(
            name, {}
        ).get("answered", False)


class BearerKey(AuthenticationBackend):
    """`Authorization: Bearer KEY`, compared in constant time; no key configured: everyone is let in."""

    def __init__(self, key: str | None):
        self.key = key

    async def authenticate(self, conn):
        if self.key is None:
            return AuthCredentials(["authenticated"]), SimpleUser("anonymous")
        header = conn.headers.get("Authorization") or ""
        given = header[7:].strip() if header.startswith("Bearer ") else ""
        if not given:
            raise AuthenticationError("Send the key as Authorization: Bearer KEY.")
        if not hmac.compare_digest(given.encode(), self.key.encode()):
            raise AuthenticationError("The key is not valid.")
        return AuthCredentials(["authenticated"]), SimpleUser("client")


def _refused(conn, exc: AuthenticationError) -> JSONResponse:
    return _error(401, "authentication_error", str(exc), {"WWW-Authenticate": "Bearer"})


def _error(status: int, error_type: str, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"detail": {"error_type": error_type, "message": message}}, status, headers)


async def _body(request: Request, limit: int, read_timeout_s: float) -> bytes | JSONResponse:
    """The body, or the response that refuses it: over `limit` bytes (413, by Content-Length before
    reading, or as it streams in), slower than `read_timeout_s` (408), not JSON (415)."""
    kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if kind and not (kind == "application/json" or kind.endswith("+json")):
        return _error(415, "unsupported_media_type", f"Send the request as application/json, not {kind!r}.")
    length = request.headers.get("content-length")
    too_large = f"The body is over {limit} bytes ({BODY_BYTES_PER_TOKEN} per token of the candidate's limit)."
    if length is not None and length.isdigit() and int(length) > limit:
        return _error(413, "request_too_large", too_large)
    chunks, size = [], 0
    try:
        with anyio.fail_after(read_timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    return _error(413, "request_too_large", too_large)
                chunks.append(chunk)
    except TimeoutError:
        return _error(408, "request_timeout", f"The body did not arrive within {read_timeout_s:g} s.")
    return b"".join(chunks)


class SystemOneApp:
    """The routes over one `answerer`: each answer runs in a worker thread, within `budget_s`."""

    def __init__(self, answerer: Answerer, budget_s: float, max_body: int, read_timeout_s: float = READ_TIMEOUT_S):
        self.answerer, self.budget_s, self.max_body = answerer, budget_s, max_body
        self.read_timeout_s = read_timeout_s

    async def models(self, request: Request) -> JSONResponse:
        today = date.today().isoformat()
        return JSONResponse(
            {
                "models": [
                    {"name": name, "description": self.answerer.description, "release_date": today}
                    for name in self.answerer.models
                ]
            }
        )

    async def drift(self, request: Request) -> JSONResponse:
        drift = self.answerer.drift
        return JSONResponse(
            drift.counters()
            if drift
            else {"drifted": False, "watched": False, "reason": "the candidate does not embed its messages"}
        )

    async def systemone(self, request: Request) -> JSONResponse:
        try:
            raw = await _body(request, self.max_body, self.read_timeout_s)
        except ClientDisconnect:
            return _error(400, "invalid_request_error", "The client left before the body arrived.")
        if isinstance(raw, JSONResponse):
            return raw
        body, errors = parse_request(raw)
        if errors:
            return JSONResponse({"detail": errors}, 422)
        if body["model"] not in self.answerer.models:
            return _error(
                404,
                "not_found_error",
                f"Model not served: {body['model']!r}; this server serves {', '.join(self.answerer.models)}",
            )
        return await self._answered(body)

    async def _answered(self, body: dict) -> JSONResponse:
        deadline = time.monotonic() + self.budget_s
        try:
            with anyio.fail_after(self.budget_s):
                answered = await anyio.to_thread.run_sync(self.answerer.answer, body, deadline, abandon_on_cancel=True)
        except (TimeoutError, OverBudget):
            return _error(
                503,
                "timeout_error",
                f"No answer within the {self.budget_s:g} s budget: the server "
                "is busy or the request too long; send it again later.",
            )
        except ValueError as exc:  # a question the model cannot take (sparrow: more than 10 levels, say)
            return JSONResponse(
                {"detail": [{"loc": ["body", "questions"], "msg": str(exc), "type": "value_error"}]}, 422
            )
        except Exception as exc:  # noqa: BLE001 - said as JSON, never as a dropped connection
            return _error(500, "internal_error", f"{type(exc).__name__}: {exc}")
        return JSONResponse(answered)


async def _not_found(request: Request, exc) -> JSONResponse:
    return _error(
        exc.status_code,
        "not_found_error" if exc.status_code == 404 else "invalid_request_error",
        f"No route {request.method} {request.url.path}",
    )


def make_app(
    answerer: Answerer,
    key: str | None = None,
    budget_s: float = BUDGET_S,
    max_body: int | None = None,
    read_timeout_s: float = READ_TIMEOUT_S,
) -> Starlette:
    """The ASGI app over `answerer`; `max_body` by default BODY_BYTES_PER_TOKEN per token of its limit."""
    candidate = answerer.calibrated.candidate
    limit = candidate.token_limit or DEFAULT_TOKEN_LIMIT
    routes = SystemOneApp(answerer, budget_s, max_body or BODY_BYTES_PER_TOKEN * limit, read_timeout_s)
    app = Starlette(
        routes=[
            Route("/v1/systemone", routes.systemone, methods=["POST"]),
            Route("/v1/models", routes.models, methods=["GET"]),
            Route("/v1/drift", routes.drift, methods=["GET"]),
        ],
        middleware=[Middleware(AuthenticationMiddleware, backend=BearerKey(key), on_error=_refused)],
        exception_handlers={404: _not_found, 405: _not_found},
    )
    cut = (
        f"the state cut to {candidate.token_limit} tokens ({candidate.counted_by})"
        if candidate.token_limit
        else f"the state not cut here ({candidate.counted_by})"
    )
    app.state.limits = f"{cut}, bodies up to {routes.max_body} bytes, each answer within {budget_s:g} s"
    app.state.answerer = answerer
    return app
