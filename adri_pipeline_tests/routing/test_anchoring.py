"""What anchors a D2 message to each open session (routing/anchoring.py), from the state's own text."""

from adri_pipeline.routing.anchoring import ANCHOR_WIDTH, anchoring, content_stems, overlap, sessions, summary


def state(message: str, last_of_suspended: str, last_of_active: str) -> dict:
    return {
        "message": message,
        "active_agent": "seguros",
        "suspended": [("imoveis", last_of_suspended)],
        "turns": [
            {"role": "user", "agent": "imoveis", "text": "quero ver apartamentos no centro"},
            {"role": "agent", "agent": "imoveis", "text": last_of_suspended},
            {"role": "user", "agent": "seguros", "text": "qual o valor do seguro do carro?"},
            {"role": "agent", "agent": "seguros", "text": last_of_active},
        ],
    }


CRITERIA = {
    "continuar_agente_ativo": "continuar com o agente ativo (seguros)",
    "retomar_sessao:imoveis": "retomar a sessão suspensa de imoveis",
    "iniciar_novo_agente": "um agente que não está na tela",
    "desambiguar": "perguntar ao usuário",
}


def test_content_words_are_folded_stemmed_and_numbers_kept_whole():
    assert content_stems("Quero PARCELAR em 10x às 14h, não à vista") == {"parce", "10x", "14h", "vista"}
    assert content_stems("sim, pode ser") == set()  # function words anchor nothing
    assert overlap(content_stems("o apartamento de 302"), "Tenho o apartamento 302 e o 401.") == 1.0
    assert overlap(set(), "qualquer coisa") == 0.0


def test_a_reply_picking_up_the_suspended_agents_offer_anchors_that_session_and_not_the_active_one():
    """ "o de dois quartos" answers what the suspended agent offered, not the active agent's question."""
    s = state(
        "o de dois quartos",
        "Achei um de dois quartos e um de três. Qual prefere?",
        "A cotação sai em R$ 120 por mês. Quer contratar?",
    )
    rows = anchoring(s["message"], s, CRITERIA)
    assert set(rows) == {"continuar_agente_ativo", "retomar_sessao:imoveis"}
    assert all(len(r) == ANCHOR_WIDTH for r in rows.values())
    resume, keep = rows["retomar_sessao:imoveis"], rows["continuar_agente_ativo"]
    assert resume[2] == 1.0 and resume[3] == 1.0  # every content word is in that agent's last turn
    assert keep[2] == 0.0 and keep[3] == -1.0
    assert resume[4] == keep[4] == 1.0  # both agents asked something
    assert (keep[6], resume[6]) == (1.0, 0.0)  # the active agent spoke last


def test_who_spoke_last_and_who_asked_follow_the_turns():
    s = state("sim", "Pronto.", "Quer contratar?")
    found = sessions(s, CRITERIA)
    assert found["continuar_agente_ativo"].asked and found["continuar_agente_ativo"].spoke_last
    assert not found["retomar_sessao:imoveis"].asked and not found["retomar_sessao:imoveis"].spoke_last
    rows = anchoring("sim", s, CRITERIA)
    assert rows["continuar_agente_ativo"][5] == 1.0  # asked, and the reply is short
    assert rows["retomar_sessao:imoveis"][5] == 0.0


def test_the_summary_tells_a_message_that_anchors_nowhere_from_one_two_sessions_take_alike():
    quiet = state("", "Pronto.", "Feito.")
    nowhere = summary("toca um samba", sessions(quiet, CRITERIA), anchoring("toca um samba", quiet, CRITERIA))
    assert nowhere[:3] == [0.0, 0.0, 0.0]
    both = state("", "Vou ver o valor do aluguel.", "Vou ver o valor da apólice.")
    alike = summary("e o valor?", sessions(both, CRITERIA), anchoring("e o valor?", both, CRITERIA))
    assert alike[0] > 0 and alike[1] == 0.0  # the best session anchors it, and the second as well


def test_a_request_in_words_no_session_has_is_told_from_a_reply_with_no_content_words():
    """Both anchor nowhere by shared words; "quero pedir uma pizza" says two things no open session
    is about (a new agent), "pode ser" says nothing of its own (it answers whoever asked)."""
    s = state("", "Achei um de dois quartos. Quer visitar?", "A cotação sai em R$ 120 por mês. Quer contratar?")
    request = summary("quero pedir uma pizza", sessions(s, CRITERIA), anchoring("quero pedir uma pizza", s, CRITERIA))
    reply = summary("pode ser", sessions(s, CRITERIA), anchoring("pode ser", s, CRITERIA))
    assert request[0] == reply[0] == 0.0  # no session shares a word with either
    assert request[3] > 0 and request[4] == request[3]  # content words, none of them anywhere on screen
    assert reply[3] == reply[4] == 0.0
    picked_up = summary(
        "o apartamento de dois quartos", sessions(s, CRITERIA), anchoring("o apartamento de dois quartos", s, CRITERIA)
    )
    assert picked_up[4] < picked_up[3]  # some of its words are the suspended agent's
    rows = anchoring("quero pedir uma pizza", s, CRITERIA)
    assert rows["continuar_agente_ativo"][7] == rows["retomar_sessao:imoveis"][7] == request[3]
