"""The training-time copies of dev's conversations: agents renamed with their options and gold, a bare
command composed where the source has no turn that is not safe to decide, and each kept as it was."""

from adri_pipeline.routing.augmentation import catalogue_versions, renamed_agents, unsafe_copies
from adri_pipeline.routing.composition import AGENT_DONE, BARE_COMMANDS

STATE = {
    "active_agent": "midia",
    "suspended": [("clima", "vai chover?")],
    "turns": [
        {"role": "user", "agent": "clima", "text": "vai chover?"},
        {"role": "agent", "agent": "clima", "text": "Não."},
        {"role": "user", "agent": "midia", "text": "toca jazz"},
        {"role": "agent", "agent": "midia", "text": "Qual deles?"},
    ],
    "message": "o segundo",
}
CRITERIA = {
    "continuar_agente_ativo": "continuar",
    "retomar_sessao:clima": "retomar clima",
    "iniciar_novo_agente": "novo",
    "desambiguar": "perguntar",
}


def test_renamed_agents_rename_the_state_the_options_and_the_gold_alike_and_keep_the_texts():
    state, criteria, gold = renamed_agents(STATE, CRITERIA, "retomar_sessao:clima", 7)
    assert state["active_agent"] == "agente_7_0" and state["suspended"] == [("agente_7_1", "vai chover?")]
    assert [t["agent"] for t in state["turns"]] == ["agente_7_1", "agente_7_1", "agente_7_0", "agente_7_0"]
    assert [t["text"] for t in state["turns"]] == [t["text"] for t in STATE["turns"]]
    assert (
        gold == "retomar_sessao:agente_7_1" and gold in criteria and list(criteria.values()) == list(CRITERIA.values())
    )


def test_unsafe_copies_only_where_the_source_has_no_turn_that_is_not_safe():
    d2 = [(STATE, CRITERIA, "continuar_agente_ativo", f"g{i}") for i in range(8)]
    copies = unsafe_copies(d2)
    assert len(copies) == 2 and all(gold == "desambiguar" for _, _, gold, _ in copies)
    assert [state["message"] for state, *_ in copies] == list(BARE_COMMANDS[:2])
    assert all(state["turns"][-1]["text"] in AGENT_DONE for state, *_ in copies)
    assert unsafe_copies(d2 + [(STATE, CRITERIA, "desambiguar", "g9")]) == []


def test_a_conversation_is_learned_twice_unless_the_agent_model_knows_none_of_its_agents():
    twice = catalogue_versions(STATE, CRITERIA, "continuar_agente_ativo", 1, 0.5, {"midia"})
    assert [weight for _, weight in twice] == [1.0, 0.5] and twice[1][0][0]["active_agent"] == "agente_1_0"
    assert catalogue_versions(STATE, CRITERIA, "continuar_agente_ativo", 1, 0.5, set()) == [
        ((STATE, CRITERIA, "continuar_agente_ativo"), 1.5)
    ]
