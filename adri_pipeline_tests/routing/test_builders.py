"""Builders emit canonical examples whose gold is always one of the options offered."""

from adri_pipeline.routing.builders import Utterance, build_conversations, build_d1, build_d4
from adri_pipeline.routing.examples import NO_MATCH

UTTERANCES = [Utterance(f"frase {i} de {intent}", intent, f"g{i % 7}", "test", "pt-BR")
              for i, intent in enumerate(["HassTurnOn", "HassListAddItem", "HassStartTimer", "HassGetWeather",
                                          "HassMediaPause", "HassVacuumStart"] * 6)]
DESCRIPTIONS = {u.intent: f"descrição de {u.intent}" for u in UTTERANCES}


def test_d1_offers_no_match_and_its_gold_is_an_option():
    examples = build_d1(UTTERANCES, DESCRIPTIONS, seed=3, dataset="t")
    assert all(NO_MATCH in e.options and e.gold_label in e.options for e in examples)
    assert all(2 <= len(e.options) - 1 <= 19 and e.metadata.n_options == len(e.options) for e in examples)
    assert {e.gold_label for e in examples} - {NO_MATCH}  # some in scope
    assert build_d1(UTTERANCES, DESCRIPTIONS, seed=3, dataset="t") == examples  # seeded


def test_d4_asks_one_yes_no_per_eligible_intent():
    d1 = build_d1(UTTERANCES, DESCRIPTIONS, seed=3, dataset="t")
    for one, four in zip(d1, build_d4(d1)):
        assert NO_MATCH not in four.options and set(four.options) == set(one.options) - {NO_MATCH}
        assert four.gold_label == ([] if one.gold_label == NO_MATCH else [one.gold_label])


def test_composed_conversations_are_marked_synthetic_with_gold_among_options():
    examples = build_conversations(UTTERANCES, seed=5, dataset="t")
    assert examples and all(e.gold_label in e.options for e in examples if e.task == "D2")
    assert all(e.metadata.synthetic for e in examples)
