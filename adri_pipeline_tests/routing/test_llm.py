"""The LLM baseline (routing/llm.py) through the real `ollama` and `openai` clients against a
loopback server that speaks both APIs (loopback/model_server.py)."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adri_pipeline.config import Settings
from adri_pipeline.jev.contract import RoutingConfigError, check_response, validate
from adri_pipeline.jev.serialize import to_request
from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline.routing.candidates import softmax
from adri_pipeline.routing.llm import LLMCandidate, letter_logprobs
from adri_pipeline_tests.jev.helpers import D2
from loopback.model_server import ModelServerStub


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_the_baseline_reads_each_options_letter_from_the_servers_log_probabilities(provider):
    """D2's four options are A-D. The server's top tokens: " B" and "B" (pooled: 0.6), "A" 0.2, and a
    word that is no letter; C and D are not listed, so each gets the most it can have: half the 0.05
    left unlisted. Softmax over the letters ignores the word's mass."""
    top = {" B": math.log(0.5), "A": math.log(0.2), "Res": math.log(0.15), "B": math.log(0.1)}
    with ModelServerStub() as stub:
        stub.next_token = lambda request: top
        settings = Settings(ollama_hosts=[stub.host], openai_hosts=[stub.host + "/v1"])
        baseline = LLMCandidate(f"{provider}:qwen-test", settings=settings)
        baseline.check()
        logits = baseline.logits(to_request(D2))["D2"]
        asked = stub.chats()[-1]
        response, _ = Calibrated(baseline).respond(to_request(D2), "D2", count_tokens=True)
    assert not baseline.verbalized and baseline.kind.confidence.startswith("option log-probabilities")
    p = softmax(logits)
    assert p["retomar_sessao:listas"] == pytest.approx(0.6 / 0.85)
    assert p["continuar_agente_ativo"] == pytest.approx(0.2 / 0.85)
    assert p["iniciar_novo_agente"] == p["desambiguar"] == pytest.approx(0.025 / 0.85)
    assert asked["logprobs"] is True and asked["top_logprobs"] == 20
    one_token = asked["options"]["num_predict"] if provider == "ollama" else asked["max_tokens"]
    assert one_token == 1
    prompt = asked["messages"][-1]["content"]
    assert "Mensagem: e a lista?" in prompt and "B) retomar_sessao:listas: retomar listas" in prompt
    assert response["answers"]["D2"]["choice"] == "retomar_sessao:listas"
    assert response["usage"]["input_tokens"] == 321  # the server's count for the one question


def test_each_question_of_a_request_is_its_own_forward_pass():
    """A D4 request carries one yes/no question per intent: one call each, their prompt tokens summed."""
    request = to_request(D2)
    request["questions"] = {
        intent: {"type": "noul", "instructions": f"A mensagem pede: {intent}?"}
        for intent in ("HassTurnOn", "HassShoppingListAddItem")
    }
    with ModelServerStub() as stub:
        stub.next_token = lambda r: (
            {"A": -0.1, "B": -2.5}
            if "HassShoppingListAddItem" in r["messages"][-1]["content"]
            else {"B": -0.2, "A": -1.8}
        )
        baseline = LLMCandidate("openai:qwen-test", settings=Settings(openai_hosts=[stub.host + "/v1"]))
        logits = baseline.logits(request)
        calls = len(stub.chats())
    assert calls == 2 and baseline.last_input_tokens == 2 * 321
    assert softmax(logits["HassShoppingListAddItem"])["sim"] > 0.9 > softmax(logits["HassTurnOn"])["sim"]


@given(
    st.dictionaries(
        st.sampled_from(["A", " A", "B", "B)", " C", "D.", "x", "Res", "1", "a"]),
        st.floats(min_value=-30, max_value=0),
        min_size=1,
    )
)
def test_a_letter_outside_the_top_never_outranks_one_inside_it(top):
    letters = "ABCD"
    values = dict(zip(letters, letter_logprobs(top, letters)))
    listed = {t.strip().rstrip(").:") for t in top} & set(letters)
    for missing in set(letters) - listed:
        assert all(values[missing] <= values[letter] + 1e-9 for letter in listed)
    assert all(math.isfinite(v) for v in values.values())


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_server_without_log_probabilities_gets_the_verbalized_fallback_labelled_as_such(provider):
    """The stub answers without log-probabilities (an older Ollama, a text-only server): the JSON
    numbers the model wrote are read instead, and the kind says so before any work."""

    def responder(request):
        if not request.get("format"):  # check()'s probe for log-probabilities, answered as text
            return "A"
        schema = request["format"]["properties"]
        options = list(schema["D2"]["properties"]["probabilidades"]["required"])
        probabilities = {o: 0.1 for o in options} | {"retomar_sessao:listas": 0.7}
        assert "Mensagem: e a lista?" in request["messages"][1]["content"]  # the serialized state, nothing else
        return json.dumps({"D2": {"probabilidades": probabilities}})

    with ModelServerStub(responder=responder) as stub:
        settings = Settings(ollama_hosts=[stub.host], openai_hosts=[stub.host + "/v1"])
        baseline = LLMCandidate(f"{provider}:qwen-test", settings=settings)
        baseline.check()
        assert baseline.verbalized and baseline.kind.confidence.startswith("verbalized")
        candidate = Calibrated(baseline)
        request = to_request(D2)
        response, seconds = candidate.respond(request, "D2")
    validate("response", response)
    answer = response["answers"]["D2"]
    assert answer["type"] == "choice" and answer["choice"] == "retomar_sessao:listas"
    assert sum(answer["probabilities"].values()) == pytest.approx(1.0)
    usable, invalid = check_response(request, response)
    assert invalid == {} and usable["D2"].confidence == pytest.approx(0.7, abs=0.01)
    assert baseline.kind.role == "llm_baseline" and not LLMCandidate.kind.confidence.startswith("verbalized")


def test_an_llm_answer_that_is_cut_or_out_of_range_counts_as_the_models_miss():
    with ModelServerStub() as stub:
        stub.script = [
            {"content": '{"D2": {"probabilidades": {"continuar_agente_ativo": 0.'},
            {
                "content": json.dumps(
                    {"D2": {"probabilidades": {"continuar_agente_ativo": 7, "iniciar_novo_agente": "x"}}}
                )
            },
        ]
        candidate = LLMCandidate(
            "openai:qwen-test", settings=Settings(openai_hosts=[stub.host + "/v1"]), verbalized=True
        )
        cut = candidate.logits(to_request(D2))["D2"]
        clipped = candidate.logits(to_request(D2))["D2"]
    assert len(set(cut.values())) == 1  # nothing learned from a cut answer: all options equal
    assert clipped["continuar_agente_ativo"] == pytest.approx(0.0) and clipped["iniciar_novo_agente"] < -10


def test_an_llm_candidate_whose_server_is_down_is_named_before_any_work():
    candidate = LLMCandidate("openai:gemma3-270m", settings=Settings(openai_hosts=["http://127.0.0.1:9/v1"]))
    with pytest.raises(RoutingConfigError, match="candidate openai:gemma3-270m: no server at http://127.0.0.1:9/v1"):
        candidate.check()


@pytest.mark.slow
def test_a_real_llama_server_gives_option_log_probabilities_not_prose(llama_on_loopback):
    """llama-server returns `top_logprobs`: the baseline reads the options from them (no verbalized
    fallback), each question one forward pass of one generated token."""
    root, alias = llama_on_loopback
    baseline = LLMCandidate(f"openai:{alias}", settings=Settings(openai_hosts=[root + "/v1"]))
    baseline.check()
    assert not baseline.verbalized
    request = to_request(D2)
    logits = baseline.logits(request)["D2"]
    assert set(logits) == set(D2.options) and all(math.isfinite(v) for v in logits.values())
    assert len(set(logits.values())) > 1  # the model put different mass on different letters
    assert baseline.last_input_tokens > 50  # the server's count of the serialized state it read
    response, _ = Calibrated(baseline).respond(request, "D2", count_tokens=True)
    usable, invalid = check_response(request, response)
    assert invalid == {} and response["usage"]["input_tokens"] == baseline.last_input_tokens


def test_the_benchmark_runs_the_baseline_it_checked_so_the_server_is_probed_once(tmp_path):
    """The up-front check finds a server without log-probabilities; the run then uses that same
    candidate (verbalized from its first question, labelled) instead of finding out again."""
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.service import run_benchmark
    from adri_pipeline.warehouse import Warehouse

    def responder(request):
        if not request.get("format"):
            return "A"
        return json.dumps(
            {
                name: {"probabilidades": {o: 0.5 for o in spec["properties"]["probabilidades"]["required"]}}
                for name, spec in request["format"]["properties"].items()
            }
        )

    with ModelServerStub(responder=responder) as stub:
        settings = Settings(openai_hosts=[stub.host + "/v1"])
        config = RunConfig(dataset="sample", runs=0, llm_max_examples=2)
        result = run_benchmark(
            config, ["openai:qwen-test"], Warehouse(tmp_path / "w.duckdb"), tmp_path / "out", settings
        )
        probes = [r for r in stub.chats() if r.get("logprobs")]
    assert result.results["openai:qwen-test"].kind["confidence"].startswith("verbalized")
    assert len(probes) == 1  # check() only
