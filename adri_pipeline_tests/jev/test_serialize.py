from pathlib import Path

import pytest

from adri_pipeline.jev.contract import ContractError, validate
from adri_pipeline.jev.examples import State, Turn
from adri_pipeline.jev.serialize import (
    MAX_STATE_CHARS,
    parse_state,
    serialize_state,
    to_request,
)
from adri_pipeline_tests.jev.helpers import D2

GOLDEN = Path(__file__).parent / "golden"


def test_serialization_matches_the_golden_file():
    assert to_request(D2)["state"] + "\n" == (GOLDEN / "d2_state.txt").read_text(encoding="utf-8")


def test_parse_reads_back_exactly_what_was_serialized():
    state = parse_state(to_request(D2)["state"])
    assert state["active_agent"] == "timers"
    assert state["suspended"] == [("listas", "põe leite na lista")]
    assert [t["text"] for t in state["turns"]] == [
        "põe leite na lista",
        "Leite anotado.",
        "timer de 5 minutos",
        "Timer iniciado.",
    ]
    assert state["message"] == "e a lista?"


def test_truncation_drops_the_oldest_turns_first():
    turns = [Turn(role="user", text=f"turno {i} " + "x" * 200) for i in range(6)]
    text = serialize_state(State(active_agent="a", recent_turns=turns), "mensagem")
    assert len(text) <= MAX_STATE_CHARS
    assert "turno 5" in text and "turno 0" not in text
    assert text.endswith("Mensagem: mensagem")


def test_request_follows_the_contract_and_d4_asks_one_question_per_option():
    validate("request", to_request(D2))
    d4 = D2.model_copy(
        update={"task": "D4", "question_type": "noul", "gold_label": ["a"], "options": {"a": "opção a", "b": "opção b"}}
    )
    request = to_request(d4)
    validate("request", request)
    assert set(request["questions"]) == {"a", "b"}
    with pytest.raises(ContractError, match="questions"):
        validate("request", {**request, "questions": {}})


def _words(text: str) -> int:
    return len(text.split())


def test_fit_tokens_keeps_the_message_and_the_newest_turns_within_the_limit():
    """The benchmark's truncation policy, to a token limit (each candidate's): oldest turns go first,
    the message stays; a text within the limit is returned as it is."""
    from adri_pipeline.jev.serialize import fit_tokens

    turns = [Turn(role="user", text=f"turno{i} " + "x " * 30) for i in range(6)]
    text = serialize_state(State(active_agent="a", recent_turns=turns), "liga a luz")
    assert fit_tokens(text, 10_000, _words) == text
    cut = fit_tokens(text, 90, _words)
    assert _words(cut) <= 90 and cut.endswith("Mensagem: liga a luz")
    assert "turno5" in cut and "turno0" not in cut
    assert parse_state(cut)["active_agent"] == "a"


def test_fit_tokens_cuts_a_message_over_the_limit_to_its_head_and_a_foreign_text_whole():
    from adri_pipeline.jev.serialize import fit_tokens

    state = serialize_state(
        State(active_agent=None, recent_turns=[Turn(role="user", text="antes")]), "começo " + "palavra " * 5000
    )
    cut = fit_tokens(state, 50, _words)
    assert _words(cut) <= 50 and "Mensagem: começo palavra" in cut and "antes" not in cut
    foreign = "texto de outro cliente " * 100_000
    cut = fit_tokens(foreign, 64, _words)
    assert _words(cut) <= 64 and foreign.startswith(cut) and _words(cut) >= 60
