from pathlib import Path

import pytest

from adri_pipeline.jev.contract import ContractError, validate
from adri_pipeline.jev.examples import CanonicalExample, State, Turn
from adri_pipeline.jev.serialize import (
    MAX_STATE_CHARS,
    parse_state,
    serialize_state,
    to_request,
)

GOLDEN = Path(__file__).parent / "golden"

D2 = CanonicalExample(
    id="t:D2:0", group_id="g0", task="D2", utterance="e a lista?",
    state=State(active_agent="timers", suspended_sessions=["listas"],
                recent_turns=[Turn(role="user", text="põe leite na\nlista", agent_id="listas"),
                              Turn(role="agent", agent_id="listas", text="Leite anotado."),
                              Turn(role="user", text="timer de 5 minutos", agent_id="timers"),
                              Turn(role="agent", agent_id="timers", text="Timer iniciado.")]),
    question="Continua, retoma, inicia ou desambigua?", question_type="choice",
    options={"continuar_agente_ativo": "continuar", "retomar_sessao:listas": "retomar listas",
             "iniciar_novo_agente": "novo", "desambiguar": "perguntar"},
    gold_label="retomar_sessao:listas")


def test_serialization_matches_the_golden_file():
    assert to_request(D2)["state"] + "\n" == (GOLDEN / "d2_state.txt").read_text(encoding="utf-8")


def test_parse_reads_back_exactly_what_was_serialized():
    state = parse_state(to_request(D2)["state"])
    assert state["active_agent"] == "timers"
    assert state["suspended"] == [("listas", "põe leite na lista")]
    assert [t["text"] for t in state["turns"]] == ["põe leite na lista", "Leite anotado.", "timer de 5 minutos",
                                                   "Timer iniciado."]
    assert state["message"] == "e a lista?"


def test_truncation_drops_the_oldest_turns_first():
    turns = [Turn(role="user", text=f"turno {i} " + "x" * 200) for i in range(6)]
    text = serialize_state(State(active_agent="a", recent_turns=turns), "mensagem")
    assert len(text) <= MAX_STATE_CHARS
    assert "turno 5" in text and "turno 0" not in text
    assert text.endswith("Mensagem: mensagem")


def test_request_follows_the_contract_and_d4_asks_one_question_per_option():
    validate("request", to_request(D2))
    d4 = D2.model_copy(update={"task": "D4", "question_type": "noul", "gold_label": ["a"],
                               "options": {"a": "opção a", "b": "opção b"}})
    request = to_request(d4)
    validate("request", request)
    assert set(request["questions"]) == {"a", "b"}
    with pytest.raises(ContractError, match="questions"):
        validate("request", {**request, "questions": {}})
