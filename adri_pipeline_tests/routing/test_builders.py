"""Builders emit canonical examples whose gold is always one of the options offered."""

from adri_pipeline.jev.examples import NO_MATCH
from adri_pipeline.routing.builders import (
    D5_OPTIONS,
    Utterance,
    build_conversations,
    build_d1,
    build_d4,
    build_d5,
    build_dataset,
    regionalism,
)

UTTERANCES = [
    Utterance(f"frase {i} de {intent}", intent, f"g{i % 7}", "test", "pt-BR")
    for i, intent in enumerate(
        ["HassTurnOn", "HassListAddItem", "HassStartTimer", "HassGetWeather", "HassMediaPause", "HassVacuumStart"] * 6
    )
]
DESCRIPTIONS = {u.intent: f"descrição de {u.intent}" for u in UTTERANCES}


def test_d1_offers_no_match_and_its_gold_is_an_option():
    examples = build_d1(UTTERANCES, DESCRIPTIONS, seed=3, dataset="t")
    assert all(NO_MATCH in e.options and e.gold_label in e.options for e in examples)
    assert all(2 <= len(e.options) - 1 <= 19 and e.metadata.n_options == len(e.options) for e in examples)
    assert {e.gold_label for e in examples} - {NO_MATCH}  # some in scope
    assert build_d1(UTTERANCES, DESCRIPTIONS, seed=3, dataset="t") == examples  # seeded


def test_d4_only_on_messages_annotated_with_two_intents():
    """Failed before: D4 copied each single-intent D1 item (the JEV design: D4 "aplica-se só a
    enunciados anotados com mais de uma intenção")."""
    examples = build_d4(UTTERANCES, DESCRIPTIONS, seed=3, dataset="t")
    assert examples and all(len(e.gold_label) == 2 and set(e.gold_label) <= set(e.options) for e in examples)
    assert all(e.metadata.synthetic and "varias_intencoes" in e.metadata.adversarial for e in examples)
    assert all(NO_MATCH not in e.options and 2 <= len(e.options) <= 19 for e in examples)
    first = examples[0]
    texts = {u.text for u in UTTERANCES}
    assert any(first.utterance.startswith(t) for t in texts) and " e " in first.utterance
    _, split_of = build_dataset(UTTERANCES, DESCRIPTIONS, "t")  # each message's two utterances share a split
    d1_split = {e.group_id: split_of[e.id] for e in build_d1(UTTERANCES, DESCRIPTIONS, dataset="t")}
    for example_id, split in split_of.items():
        if ":D4:" in example_id:
            example = next(e for e in build_dataset(UTTERANCES, DESCRIPTIONS, "t")[0] if e.id == example_id)
            assert {d1_split[g] for g in example.group_id.split("+")} == {split}


def test_d5_only_where_the_source_annotates_scope():
    assert build_d5(UTTERANCES, dataset="t") == []  # nothing says what is out of scope
    with_scope = UTTERANCES + [Utterance("what is the meaning of life", NO_MATCH, "oos-1", "clinc150/test", "en")]
    examples = build_d5(with_scope, dataset="t")
    assert len(examples) == len(with_scope) and all(set(e.options) == set(D5_OPTIONS) for e in examples)
    assert [e.gold_label for e in examples].count("fora_do_escopo") == 1
    assert {e.gold_label for e in examples} == {"no_escopo", "fora_do_escopo"}  # never requer_bloqueio: no data


def test_regionalisms_swap_a_word_for_the_other_varietys_and_only_in_portuguese():
    """The JEV design's adversarial categories (task 27) name "regionalismos"; none was built before."""
    assert regionalism("Liga o ventilador da sala", "pt-BR") == "Liga a ventoinha da sala"  # the article agrees
    assert regionalism("Ventoinha do quarto a 50", "pt") == "Ventilador do quarto a 50"
    assert regionalism("desliga as ventoinhas", "pt") == "desliga os ventiladores"
    assert regionalism("liga o cortador de grama", "pt-BR") == "liga o corta-relva"  # the phrase whole
    assert regionalism("Abre as persianas do quarto", "pt-BR") == "Abre os estores do quarto"
    assert regionalism("turn on the fan", "en") is None and regionalism("acende a luz", "pt-BR") is None
    assert regionalism("programa o temporizador", "pt") is None  # both varieties say it: not a regionalism
    utterances = [Utterance(f"liga o ventilador {i}", "HassTurnOn", f"g{i}", "test", "pt-BR") for i in range(60)]
    examples = build_d1(utterances, DESCRIPTIONS, seed=3, dataset="t")
    regional = [e for e in examples if "regionalismo" in e.metadata.adversarial]
    assert regional and all("ventoinha" in e.utterance for e in regional)
    assert len(regional) < len(examples) / 2  # a share, the rest keep their own word
    english = [
        Utterance(u.text.replace("liga o ventilador", "turn on the fan"), u.intent, u.group_id, u.source, "en")
        for u in utterances
    ]
    assert not any(
        "regionalismo" in e.metadata.adversarial for e in build_d1(english, DESCRIPTIONS, seed=3, dataset="t")
    )
    conversations = build_conversations(
        [
            Utterance(f"liga o ventilador {i}", intent, f"g{i}", "test", "pt-BR")
            for i, intent in enumerate(["HassTurnOn", "HassStartTimer", "HassListAddItem"] * 20)
        ],
        seed=5,
        dataset="t",
    )
    tagged = [e for e in conversations if "regionalismo" in e.metadata.adversarial]
    assert tagged and all("ventoinha" in e.utterance for e in tagged)


def test_composed_conversations_are_marked_synthetic_with_gold_among_options():
    examples = build_conversations(UTTERANCES, seed=5, dataset="t")
    assert examples and all(e.gold_label in e.options for e in examples if e.task == "D2")
    assert all(e.metadata.synthetic for e in examples)


def test_sgd_labels_follow_the_real_service_switches(tmp_path):
    """A small dialogue written for this test in SGD's shape: continue, a new service, a return."""
    import json

    from adri_pipeline.routing.builders import load_sgd

    schemas = {
        "Buses_1": {"description": "Book bus journeys", "intents": {"BuyBusTicket": "Buy tickets"}},
        "Hotels_1": {"description": "Reserve hotels", "intents": {"ReserveHotel": "Book a room"}},
        **{f"Other_{i}": {"description": f"other {i}", "intents": {"Do": "do it"}} for i in range(4)},
    }

    def turn(speaker, text, service, intent=None):
        return {"speaker": speaker, "utterance": text, "frames": [{"service": service, "active_intent": intent}]}

    dialogue = {
        "dialogue_id": "t-1",
        "split": "test",
        "services": ["Buses_1", "Hotels_1"],
        "turns": [
            turn("USER", "I need a bus to Fresno.", "Buses_1", "BuyBusTicket"),
            turn("SYSTEM", "When are you leaving?", "Buses_1"),
            turn("USER", "Tomorrow.", "Buses_1", "BuyBusTicket"),  # continue (short reply)
            turn("SYSTEM", "Booked. Anything else?", "Buses_1"),
            turn("USER", "Find me a hotel there.", "Hotels_1", "ReserveHotel"),  # a new service
            turn("SYSTEM", "How many nights?", "Hotels_1"),
            turn("USER", "Actually, change the bus to 9 am.", "Buses_1", "BuyBusTicket"),  # back to the bus
        ],
    }
    (tmp_path / "schemas.json").write_text(json.dumps(schemas))
    (tmp_path / "dialogues_multiservice.jsonl").write_text(json.dumps(dialogue) + "\n")
    d2 = {e.utterance: e for e in load_sgd(tmp_path, dialogues=1) if e.task == "D2"}
    assert d2["Tomorrow."].gold_label == "continuar_agente_ativo"
    assert d2["Find me a hotel there."].gold_label == "iniciar_novo_agente"
    back = d2["Actually, change the bus to 9 am."]
    assert back.gold_label == "retomar_sessao:Buses_1" and back.state.active_agent == "Hotels_1"
    assert back.state.suspended_sessions == ["Buses_1"] and len(back.state.recent_turns) == 6
    assert all(e.group_id == "sgd:t-1" and e.metadata.language == "en" for e in d2.values())


def test_only_dev_gets_more_conversations_and_the_bare_command_ambiguity():
    """Dev composes four conversations per two utterances and adds the bare command after a finished
    task (desambiguar); calibration and test keep one per two and never carry it, so their frozen
    splits stay what they were."""
    from adri_pipeline.routing.builders import AGENT_DONE, BARE_COMMANDS
    from adri_pipeline.routing.datasets import load_source

    utterances, descriptions = load_source("sample")
    examples, split_of = build_dataset(utterances, descriptions, "sample")
    d2 = {
        split: [e for e in examples if e.task == "D2" and split_of[e.id] == split]
        for split in ("dev", "calibration", "test")
    }
    d1 = {split: sum(1 for e in examples if e.task == "D1" and split_of[e.id] == split) for split in d2}
    bare = {split: [e for e in d2[split] if e.utterance in BARE_COMMANDS] for split in d2}
    assert len(d2["dev"]) / d1["dev"] > 3 * len(d2["test"]) / d1["test"]
    assert bare["dev"] and all(e.gold_label == "desambiguar" for e in bare["dev"])
    assert all(e.state.recent_turns[-1].text in AGENT_DONE for e in bare["dev"])
    assert not bare["calibration"] and not bare["test"]


def test_every_task_sends_its_decision_rule_and_a_ruleless_team_question_is_a_departure(tmp_path):
    """The JEV design, task 21: "Cada tarefa tem pergunta, opções com descrição e regra de decisão";
    D1, D3, D4 and D5 went out with a question alone."""
    from adri_pipeline.jev.serialize import to_request
    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.departures import departures
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline_tests.routing.helpers import line, write

    dataset = build(RunConfig(dataset="sample"))
    seen = set()
    for example in dataset.examples:
        questions = to_request(example)["questions"].values()
        if example.task == "D4":
            assert all("mesmo que peça outras" in q["criteria"]["true"] for q in questions)
        else:
            assert all("Regra:" in q["instructions"] for q in questions), example.task
        if example.task == "D2":  # the design's own words reach the candidate, not only the constant
            assert all("mesmo que seja curto" in q["instructions"] for q in questions)
        seen.add(example.task)
    assert seen >= {"D1", "D2", "D3", "D4"}
    assert not any("no decision rule" in d for d in departures(dataset, RunConfig(dataset="sample"), {}))

    team = build(RunConfig(dataset=str(write(tmp_path / "t.jsonl", [line(i) for i in range(12)]))), tmp_path)
    assert any("questions of D2 state no decision rule" in d for d in departures(team, RunConfig(), {}))
