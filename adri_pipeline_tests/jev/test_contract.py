"""The contract is the published System One wire: our schemas accept what typesafe-sdk builds and
parses, our answers pass jevcompat's own validators, and every fault of jevcompat's reference server
that changes what an answer means makes that answer unusable (read through the official client)."""

import math

import pytest
import typesafe_sdk as ts
from jevcompat.client import Response as JevcompatResponse
from jevcompat.client import parse_json
from jevcompat.validate import validate_success

from adri_pipeline.jev.contract import (
    answer_from,
    check_response,
    options_of,
    read_answer,
    response,
    schema_errors,
    validate,
)
from adri_pipeline.jev.serialize import to_request
from adri_pipeline.models.systemone import InvalidResponse, SystemOneServer
from adri_pipeline_tests.jev.helpers import D2
from loopback.systemone_servers import jevcompat_mock

QUESTIONS = {
    "rota": {
        "type": "choice",
        "instructions": "Para qual agente?",
        "criteria": {"timers": "temporizadores", "listas": "listas de compras", "Clima": None},
    },
    "pode": {
        "type": "noul",
        "instructions": "Dá para encaminhar sem perguntar?",
        "criteria": {"true": "sim", "false": "não"},
    },
    "urgência": {"type": "score", "instructions": "Quão urgente?", "criteria": ["pode esperar", "hoje", "agora"]},
}
REQUEST = {
    "model": "jev-latest",
    "state": "Contexto:\nAgente ativo: timers\nMensagem: e a lista?",
    "questions": QUESTIONS,
}


def test_questions_the_official_client_builds_follow_our_request_schema():
    built = {
        "a": ts.Noul(instructions="Is it spam?").model_dump(),
        "b": ts.Noul(criteria={"true": "spam"}).model_dump(),
        "c": ts.Choice(instructions="Tone?", criteria={"calm": None, "angry": {"hint": "shouting"}}).model_dump(),
        "d": ts.Score(instructions="Urgency?", criteria=["later", "now"]).model_dump(),
    }
    validate("request", {"model": "jev-latest", "state": {"message": "hi"}, "questions": built})
    assert schema_errors(
        "request",
        {"model": "m", "state": "s", "questions": {"e": {"type": "score", "criteria": {"0": "later", "1": "now"}}}},
    )  # map-form score criteria: refused


def test_our_answers_parse_with_the_official_client_and_pass_jevcompats_validators():
    probabilities = {
        "rota": {"timers": 0.2, "listas": 0.7, "Clima": 0.1},
        "pode": {"sim": 0.8, "nao": 0.2},
        "urgência": {"0": 0.1, "1": 0.3, "2": 0.6},
    }
    body = response("adri-test", {n: answer_from(q, probabilities[n]) for n, q in QUESTIONS.items()}, 42)
    validate("response", body)
    import json

    parsed = ts.SystemOneResponse.model_validate_json(json.dumps(body))  # as the client parses a body
    assert parsed.choices["rota"].choice == "listas" and parsed.nouls["pode"].noul == pytest.approx(0.8)
    assert parsed.scores["urgência"].score == pytest.approx(1.5) and parsed.usage.input_tokens == 42

    raw = json.dumps(body).encode()
    data, error, nonfinite = parse_json(raw)
    wire = JevcompatResponse(
        status=200,
        headers={"content-type": "application/json"},
        body=raw,
        ms=1.0,
        data=data,
        json_error=error,
        nonfinite=nonfinite,
    )
    assert validate_success(REQUEST, wire) == []  # confidences follow the reference formulas too
    usable, invalid = check_response(REQUEST, body)
    assert invalid == {} and usable["rota"].confidence == pytest.approx(0.7)
    assert read_answer(QUESTIONS["pode"], body["answers"]["pode"]).option == "sim"
    assert options_of(QUESTIONS["urgência"]) == ["0", "1", "2"]


def _through_the_official_client(url: str):
    server = SystemOneServer(f"jev:{url}", timeout_s=10, retries=0)
    try:
        return check_response(REQUEST, server.ask(REQUEST).body)
    finally:
        server.close()


def test_the_reference_server_without_faults_gives_only_usable_answers():
    with jevcompat_mock() as url:
        usable, invalid = _through_the_official_client(url)
    assert invalid == {} and set(usable) == set(QUESTIONS)
    assert all(0 <= r.confidence <= 1 and math.isclose(sum(r.probabilities.values()), 1) for r in usable.values())


@pytest.mark.parametrize(
    "fault, broken",
    [
        ("choice-second", {"rota"}),  # the choice is not the most probable option
        ("choice-sum", {"rota"}),  # probabilities sum to about 1.2
        ("choice-key-case", {"rota"}),  # probabilities name options nobody offered
        ("noul-range", {"pode"}),  # noul above 1
        ("score-sum", {"urgência"}),
        ("score-argmax", {"urgência"}),  # score is not the expectation
        ("confidence-over", {"rota", "urgência"}),
        ("first-question-only", {"pode", "urgência"}),  # missing answers
        ("extra-answer", set(QUESTIONS)),  # an answer nobody asked for: nothing from that response is trusted
        ("nan", set(QUESTIONS)),
        ("no-usage", set(QUESTIONS)),
    ],
)
def test_every_fault_that_changes_an_answer_makes_it_unusable(fault, broken):
    with jevcompat_mock(fault) as url:
        try:
            usable, invalid = _through_the_official_client(url)
        except InvalidResponse:  # the official client refused the whole response: nothing usable either
            usable, invalid = {}, {n: "rejected by the client" for n in QUESTIONS}
    assert set(invalid) == broken, invalid
    assert set(usable) == set(QUESTIONS) - broken


def test_answers_naming_an_option_not_offered_are_discarded_and_counted():
    request = to_request(D2)
    response = {
        "model": "m",
        "usage": {"input_tokens": 3, "output_tokens": 0},
        "answers": {
            "D2": {
                "type": "choice",
                "choice": "transferir_humano",
                "probabilities": {"transferir_humano": 1.0},
                "confidence": 1.0,
            }
        },
    }
    usable, invalid = check_response(request, response)
    assert usable == {} and list(invalid) == ["D2"] and "transferir_humano" in invalid["D2"]
    old_dialect = {"contract": "jev-compat-v1", "answers": {"D2": {"answer": "x"}}}
    assert check_response(request, old_dialect)[0] == {}
