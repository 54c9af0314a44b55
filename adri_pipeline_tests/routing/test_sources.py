"""The built-in sources read as their files say: SGD's real service switches are its D2 labels."""


def test_sgd_labels_follow_the_real_service_switches(tmp_path):
    """A small dialogue written for this test in SGD's shape: continue, a new service, a return."""
    import json

    from adri_pipeline.routing.sources import load_sgd

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
