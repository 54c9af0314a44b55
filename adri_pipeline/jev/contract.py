"""The System One wire (TypeSafe's `POST /v1/systemone`), the one contract the routing benchmark, the
mirror gate and `adri routing serve` speak: JSON Schemas in contracts/jev/schemas,
and the checks a schema cannot state.

A request is `{"model", "state", "questions": {id: {"type": "noul"|"choice"|"score", "instructions",
"criteria"}}}`; an answer is `{"type": "noul", "noul": p}`, `{"type": "choice", "choice",
"probabilities", "confidence"}` or `{"type": "score", "score", "legend", "probabilities",
"confidence"}`, with `usage.input_tokens` per response. Inside the project a question's options have
one name each: a choice's criteria keys, `sim`/`nao` for a yes/no (the JEV design's labels), `"0"` ...
`"n-1"` for a score's levels — `options_of`, `answer_from` and `read_answer` translate.

A server that breaks the spec in a way that changes what an answer means (the choice is not the most
probable option, probabilities that do not sum to 1, an answer nobody asked for, a missing one, a
noul above 1, NaN) gives an invalid answer: `check_response` names it, and the caller discards it —
the benchmark counts it, the gate lets the rule decide. Tolerances are jevcompat's SPEC §5.

Answers in the dialect this project spoke before (`contract: jev-compat-v1`, `answer`,
`confidence_source`) are not read: nothing stored keeps raw answers (predictions and shadow logs
keep the decision), and a mirror callable still answering that way is an invalid answer — the rule
decides and the log says `invalid_answer`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

from jsonschema import Draft202012Validator

from adri_pipeline.config import CONTRACTS
from adri_pipeline.errors import AdriError

DEFAULT_MODEL = "jev-latest"  # the alias every System One server accepts (jevcompat request.model-alias)
SCHEMAS = CONTRACTS / "jev" / "schemas"
YES, NO = "sim", "nao"
EPS_SUM = 0.05  # jevcompat SPEC §5: probabilities sum to 1 within this
EPS_ROUND = 0.005  # the choice may tie the best option within rounding
EPS_SCORE = 0.02


class ContractError(AdriError, ValueError):
    pass


class RoutingConfigError(AdriError, ValueError):
    """An unknown dataset or candidate, or data that is not here; the message says which."""


@lru_cache(maxsize=2)
def validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8")))


def schema_errors(kind: str, document) -> list[tuple[list, str]]:
    """(path, message) of every place `document` breaks the schema, shallowest first."""
    errors = sorted(validator(kind).iter_errors(document), key=lambda e: (len(e.path), list(map(str, e.path))))
    return [(list(e.path), e.message) for e in errors]


def validate(kind: str, document: dict) -> None:
    errors = schema_errors(kind, document)
    if errors:
        path, message = errors[0]
        where = "/".join(str(p) for p in path) or "(root)"
        raise ContractError(f"{kind} does not follow the System One wire at {where}: {message}")


def text_of(content) -> str:
    """Instructions, descriptions and states may be text, objects or arrays on the wire; the models
    here read text."""
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, sort_keys=True)


def options_of(question: dict) -> list[str]:
    if question["type"] == "noul":
        return [YES, NO]
    if question["type"] == "score":
        return [str(i) for i in range(len(question["criteria"]))]
    return list(question["criteria"])


def descriptions_of(question: dict) -> dict[str, str]:
    """Option -> what it means, as text: a yes/no's criteria sides, a score's levels."""
    criteria = question.get("criteria")
    if question["type"] == "noul":
        criteria = criteria or {}
        return {YES: text_of(criteria.get("true")) or "sim", NO: text_of(criteria.get("false")) or "não"}
    if question["type"] == "score":
        return {str(i): text_of(level) for i, level in enumerate(criteria)}
    return {option: text_of(description) for option, description in criteria.items()}


def choice_confidence(probabilities: list[float]) -> float:
    """jevcompat SPEC §4.5: (max p - 1/n) / (1 - 1/n)."""
    n = len(probabilities)
    return 1.0 if n <= 1 else max(0.0, (max(probabilities) - 1 / n) / (1 - 1 / n))


def score_confidence(probabilities: list[float]) -> float:
    """jevcompat SPEC §4.5: 1 - (expected distance to the most probable level) / (that of a uniform)."""
    n = len(probabilities)
    if n <= 1:
        return 1.0
    mode = max(range(n), key=lambda i: probabilities[i])
    uniform = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return max(0.0, 1 - sum(p * abs(i - mode) for i, p in enumerate(probabilities)) / uniform)


def answer_from(question: dict, probabilities: dict[str, float]) -> dict:
    """The wire answer for one question, from a probability per option (options_of)."""
    if question["type"] == "noul":
        return {"type": "noul", "noul": float(probabilities[YES])}
    names = options_of(question)
    values = [float(probabilities[o]) for o in names]
    if question["type"] == "choice":
        best = max(range(len(names)), key=lambda i: values[i])
        return {
            "type": "choice",
            "choice": names[best],
            "probabilities": dict(zip(names, values)),
            "confidence": choice_confidence(values),
        }
    return {
        "type": "score",
        "score": float(sum(i * p for i, p in enumerate(values))),
        "legend": {
            str(i): level if isinstance(level, str) else text_of(level) for i, level in enumerate(question["criteria"])
        },
        "probabilities": dict(zip(names, values)),
        "confidence": score_confidence(values),
    }


def response(model: str, answers: dict[str, dict], input_tokens: int = 0, output_tokens: int = 0) -> dict:
    return {
        "model": model,
        "answers": answers,
        "usage": {"input_tokens": int(input_tokens), "output_tokens": int(output_tokens)},
    }


@dataclass(frozen=True)
class Reading:
    """One usable answer as the project reads it: the option chosen (a score: its expected level),
    a probability per option (options_of), and the probability of the option chosen — the one
    confidence every candidate is compared and thresholded on, whatever its wire `confidence` says."""

    option: str | float
    probabilities: dict[str, float]
    confidence: float


def read_answer(question: dict, answer: dict) -> Reading:
    """A checked answer (check_response) as a Reading."""
    if question["type"] == "noul":
        yes = float(answer["noul"])
        probabilities = {YES: yes, NO: 1.0 - yes}
        option = YES if yes >= 0.5 else NO
        return Reading(option, probabilities, probabilities[option])
    total = sum(float(v) for v in answer["probabilities"].values()) or 1.0
    probabilities = {o: float(answer["probabilities"][o]) / total for o in options_of(question)}
    if question["type"] == "choice":
        return Reading(answer["choice"], probabilities, probabilities[answer["choice"]])
    return Reading(float(answer["score"]), probabilities, float(answer["confidence"]))


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _distribution(probabilities: dict, names: list[str]) -> str:
    if set(probabilities) != set(names):
        missing, extra = sorted(set(names) - set(probabilities)), sorted(set(probabilities) - set(names))
        return f"probabilities name {extra or 'no'} extra and {missing or 'no'} missing option(s)"
    total = sum(float(probabilities[o]) for o in names)
    if abs(total - 1.0) > EPS_SUM:
        return f"probabilities sum to {total:.4f}, not 1"
    return ""


def answer_problem(question: dict, answer) -> str:
    """Why an answer cannot be used ("" when it can)."""
    if not isinstance(answer, dict):
        return "no answer"
    if answer.get("type") != question["type"]:
        return f"answer type {answer.get('type')!r} for a {question['type']} question"
    errors = schema_errors(
        "response", {"model": "-", "answers": {"q": answer}, "usage": {"input_tokens": 0, "output_tokens": 0}}
    )
    if errors:
        path, message = errors[0]
        return f"{'/'.join(map(str, path[2:])) or 'answer'}: {message}"
    if question["type"] == "noul":
        return ""
    names = options_of(question)
    problem = _distribution(answer["probabilities"], names)
    if problem:
        return problem
    probabilities = {o: float(answer["probabilities"][o]) for o in names}
    if question["type"] == "choice":
        if answer["choice"] not in names:
            return f"choice {answer['choice']!r} is not an option"
        if max(probabilities.values()) - probabilities[answer["choice"]] > EPS_ROUND:
            return f"choice {answer['choice']!r} is not the most probable option"
        return ""
    expected = sum(int(o) * p for o, p in probabilities.items())
    if abs(float(answer["score"]) - expected) > EPS_SCORE + EPS_ROUND * len(names):
        return f"score {answer['score']} is not the expectation of its probabilities ({expected:.4f})"
    return ""


def check_response(request: dict, body) -> tuple[dict[str, Reading], dict[str, str]]:
    """(usable readings, why each other question's answer is not usable). A response that breaks the
    envelope (not an object, no usage, an answer nobody asked for, NaN or infinity anywhere) makes
    every answer unusable: such a server cannot be trusted on any of them."""
    questions = request["questions"]
    if not isinstance(body, dict):
        return {}, {name: "the response is not a JSON object" for name in questions}
    if not _finite(body):
        return {}, {name: "the response holds NaN or infinity" for name in questions}
    envelope = [(p, m) for p, m in schema_errors("response", {**body, "answers": {}}) if p[:1] != ["answers"]]
    if envelope:
        path, message = envelope[0]
        return {}, {name: f"response {'/'.join(map(str, path)) or 'envelope'}: {message}" for name in questions}
    extra = sorted(set(body["answers"]) - set(questions))
    if extra:
        return {}, {name: f"an answer nobody asked for ({extra[0]!r})" for name in questions}
    usable, invalid = {}, {}
    for name, question in questions.items():
        problem = answer_problem(question, body["answers"].get(name))
        if problem:
            invalid[name] = problem
        else:
            usable[name] = read_answer(question, body["answers"][name])
    return usable, invalid
