"""Error causes and the D4 slice as routing/evaluation.py reports them."""





def test_error_causes_follow_the_seeds_taxonomy():
    from adri_pipeline.jev.examples import CanonicalExample, Metadata, State
    from adri_pipeline.routing.builders import load_canonical  # noqa: F401 (the canonical shape)
    from adri_pipeline.routing.evaluation import error_cause

    def example(**metadata):
        return CanonicalExample(id="x", group_id="g", task="D2", state=State(active_agent="a"), utterance="sim",
                                question="?", question_type="choice",
                                options={"continuar_agente_ativo": "c", "desambiguar": "d"},
                                gold_label="continuar_agente_ativo", metadata=Metadata(**metadata))
    assert error_cause(example(), "transferir") == "instrucao"
    assert error_cause(example(ambiguity="alta"), "desambiguar") == "ambiguidade"
    assert error_cause(example(adversarial=["curta_dependente_de_contexto"]), "desambiguar") == "contexto_insuficiente"
    assert error_cause(example(adversarial=["abreviacao"]), "desambiguar") == "linguagem"
    assert error_cause(example(), "desambiguar") == "modelo"



def test_a_d4_decision_with_one_intent_is_reported_apart():
    """The JEV design applies D4 only to messages annotated with two or more intents."""
    import polars as pl

    from adri_pipeline.routing.evaluation import ONE_INTENT_D4, multi_intent_d4_apart

    frame = pl.DataFrame({"task": ["D4", "D4", "D4", "D1"], "gold": ["a|b", "a", "", "x|y"]})
    assert multi_intent_d4_apart(frame)["task"].to_list() == ["D4", ONE_INTENT_D4, ONE_INTENT_D4, "D1"]

