import json

import pytest

from adri_pipeline.routing.candidates import Calibrated, OllamaCandidate
from adri_pipeline.routing.contract import ContractError, usable_answers, validate
from adri_pipeline.routing.serialize import to_request
from adri_pipeline_tests.ollama_server import OllamaStub
from adri_pipeline_tests.routing.test_serialize import D2


def test_ollama_candidate_through_the_loopback_server_gives_a_contract_response():
    def responder(request):
        schema = request["format"]["properties"]
        options = list(schema["D2"]["properties"]["probabilidades"]["required"])
        probabilities = {o: 0.1 for o in options} | {"retomar_sessao:listas": 0.7}
        assert "Mensagem: e a lista?" in request["messages"][1]["content"]  # the serialized state, nothing else
        return json.dumps({"D2": {"probabilidades": probabilities}})

    with OllamaStub(responder=responder) as stub:
        candidate = Calibrated(OllamaCandidate("qwen-test", stub.host))
        request = to_request(D2)
        response, seconds = candidate.respond(request, "D2")
    validate("response", response)
    answer = response["answers"]["D2"]
    assert answer["answer"] == "retomar_sessao:listas" and answer["confidence_source"] == "model_answer"
    assert answer["confidence"] == pytest.approx(0.7, abs=0.01)
    assert sum(answer["probabilities"].values()) == pytest.approx(1.0)
    assert usable_answers(request, response) == ({"D2": answer}, [])


def test_answers_naming_an_option_not_offered_are_discarded_and_counted():
    request = to_request(D2)
    response = {"contract": "jev-compat-v1", "answers": {
        "D2": {"answer": "transferir_humano", "probabilities": {"transferir_humano": 1.0}, "confidence": 1.0}}}
    usable, discarded = usable_answers(request, response)
    assert usable == {} and discarded == ["D2"]
    with pytest.raises(ContractError):
        usable_answers(request, {"contract": "jev-compat-v1", "answers": {"D2": {"answer": "x"}}})
