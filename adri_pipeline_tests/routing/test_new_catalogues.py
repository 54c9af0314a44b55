"""D2's confidence fitted on catalogues a candidate never fitted on (routing/new_catalogues.py)."""

import pickle

import numpy as np

from adri_pipeline.jev.examples import CanonicalExample
from adri_pipeline.routing.calibration import Calibrated, Familiarity
from adri_pipeline.routing.new_catalogues import (
    authors_held_out,
    catalogues,
    fold_units,
    folds,
    held_out_answers,
    team_turns,
)
from adri_pipeline_tests.routing.helpers import PrefersTheSecond, TwoMessages, line


def _turn(i: int, active: str, suspended: list[str]) -> CanonicalExample:
    row = line(i)
    row["state"] = {"active_agent": active, "suspended_sessions": suspended, "recent_turns": [], "eligible_intents": []}
    row["options"] = {"continuar_agente_ativo": "continuar", "iniciar_novo_agente": "outro assunto"}
    row["metadata"]["n_options"] = 2
    return CanonicalExample.model_validate(row)


def test_agents_named_together_anywhere_make_one_catalogue():
    """a-b in one turn and b-c in another: a, b and c are one catalogue; x-y another; no agent, its own."""
    turns = [_turn(1, "a", ["b"]), _turn(2, "b", ["c"]), _turn(3, "x", ["y"]), _turn(4, "", [])]
    assert catalogues(turns) == {
        turns[0].id: "a+b+c",
        turns[1].id: "a+b+c",
        turns[2].id: "x+y",
        turns[3].id: turns[3].group_id,
    }
    fold_of = folds({"t1": "big", "t2": "big", "t3": "big", "t4": "small", "t5": "other"}, 2)
    assert fold_of["big"] != fold_of["small"] == fold_of["other"]


def test_each_hand_written_turn_is_answered_by_a_fit_that_never_saw_its_author_nor_its_catalogue():
    """Folded by catalogue, a held-out turn was answered by a fit that had learned its author's other
    catalogues, and looked surer than a new author's turns bear out: the folds hold out whole authors (and
    whole catalogues: two authors whose turns name one agent id are held out together)."""
    from adri_pipeline.routing.candidates import make_candidate
    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.run import fit_on

    dataset = build(RunConfig(dataset="sample"))
    fitted_dev: list[set[str]] = []

    def recording_fit(candidate, dev):
        fitted_dev.append({e.id for e in dev})
        fit_on(candidate, dev, dataset)

    full = make_candidate("static-logreg")
    fit_on(full, dataset.in_split("dev"), dataset)
    answers = held_out_answers(full, dataset, 3, recording_fit)
    turns = team_turns(dataset)
    catalogue_of = catalogues(turns)
    dev = {e.id for e in dataset.in_split("dev")}
    assert answers.folds == 3 and len(fitted_dev) == 3 and answers.catalogues == len(set(catalogue_of.values()))
    assert [e.id for e in answers.examples] == [e.id for e in turns] and len(turns) > 250
    author_of = dataset.author_of
    assert answers.author_of == {e.id: author_of[e.id] for e in turns} and len(set(author_of.values())) == 14
    assert "14 authors, cross-fitted in 3 folds by author" in answers.statement()
    for fit in fitted_dev:  # every fit: all of dev but whole authors and whole catalogues of team turns
        left_out = dev - fit
        assert left_out and all(catalogue_of.get(i) for i in left_out)
        assert not {catalogue_of[i] for i in left_out} & {catalogue_of[e.id] for e in turns if e.id in fit}
        assert not {author_of[i] for i in left_out} & {author_of[e.id] for e in turns if e.id in fit}
    assert sum(len(dev - fit) for fit in fitted_dev) == len(turns)  # each turn held out once
    assert all(set(logits) == {"D2"} for logits in answers.logits)
    assert held_out_answers(full, dataset, 0, recording_fit) is None and len(fitted_dev) == 3


def test_with_fewer_authors_than_folds_the_folds_hold_out_catalogues():
    """One team's file of 31 catalogues is one author: five folds cannot each leave an author out."""
    turns = [_turn(i, f"agent{i}", []) for i in range(1, 7)]
    one_each = {e.id: f"author {i % 5}" for i, e in enumerate(turns)}
    assert authors_held_out(turns, one_each, 5) == one_each
    assert authors_held_out(turns, one_each, 6) == {}
    assert authors_held_out(turns, {turns[0].id: "author 0"}, 1) == {}  # a turn without an author


def test_authors_whose_turns_share_a_catalogue_are_held_out_together_or_the_folds_hold_out_catalogues():
    """Five authors, two of whom name the same agent: four units. Four folds hold out authors (the two together);
    five hold out catalogues, since a fold of no turns would fit once more for nothing."""
    turns = [_turn(i, f"agent{i}", []) for i in range(1, 11)]
    turns[2] = _turn(3, "agent1", [])  # the second author's first turn names the first author's agent
    author_of = {e.id: f"author {i // 2}" for i, e in enumerate(turns)}
    unit_of, authors = fold_units(turns, author_of, 4)
    assert authors == author_of and len(set(unit_of.values())) == 4
    assert unit_of[turns[0].id] == unit_of[turns[2].id] != unit_of[turns[4].id]
    assert fold_units(turns, author_of, 5) == (catalogues(turns), {})


def _request(message: str, i: int = 0) -> dict:
    """A D2 request; `i` tells apart requests with the same message (in what option "a" says)."""
    question = {"type": "choice", "criteria": {"a": f"option {i}", "b": ""}}
    return {"state": f"Mensagem: {message}", "questions": {"D2": question}}


def test_a_task_fitted_on_new_catalogues_answers_as_those_answers_say_and_is_not_blended():
    """The held-out answers are the calibration answers (the fold candidates', not the full one's), the
    temperature is theirs, and a foreign message keeps that confidence instead of falling to uniform."""
    calibrated = Calibrated(PrefersTheSecond())
    calibrated.familiarity = Familiarity(TwoMessages(), ["familiar"], ["familiar"])
    held = [_request("familiar", i) for i in range(40)]
    calibrated.fit_unblended_temperature("D2", held, [{"D2": {"a": 1.0, "b": 0.0}}] * 40, ["a"] * 30 + ["b"] * 10)
    expected_t = 1.0 / np.log(0.75 / 0.25)  # a margin of 1 read as the 75 % it was right
    assert abs(calibrated.temperature["D2"] - expected_t) < 0.2 and calibrated.unblended == {"D2"}
    held_answer = calibrated.respond(held[0], "D2")[0]["answers"]["D2"]
    assert held_answer["choice"] == "a"  # the fold candidate's answer, not PrefersTheSecond's own
    foreign = calibrated.respond(_request("foreign"), "D2")[0]["answers"]["D2"]
    assert foreign["choice"] == "b" and foreign["probabilities"]["b"] > 0.8
    calibrated.forget_calibration_answers()
    assert calibrated.respond(held[0], "D2")[0]["answers"]["D2"]["choice"] == "b"
    calibrated.held_out = "answers"
    restored = pickle.loads(pickle.dumps(calibrated))
    assert restored.held_out is None and restored.unblended == {"D2"}


def test_d2s_temperature_also_hears_the_other_sources_calibration_splits():
    """Fitted on the team's turns alone, the temperature was confidently wrong on sources unlike them
    (fitted on SGD, 15-22 % wrong at p >= 0.85 on the composed pt-BR sources): the other sources' D2
    calibration decisions join its fit. A source the model gets wrong softens it."""
    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.run import prepare

    config = RunConfig(dataset="sample", new_catalogue_folds=2)
    dataset = build(config)
    alone, _ = prepare("static-logreg", dataset, config, others={})
    wrong = [
        e.model_copy(update={"gold_label": next(o for o in e.options if o != e.gold_label)})
        for e in dataset.in_split("test")
        if e.task == "D2"
    ] * 5
    with_wrong, _ = prepare("static-logreg", dataset, config, others={"a source unlike the team's": wrong})
    assert with_wrong.temperature["D2"] > 1.2 * alone.temperature["D2"]
    assert with_wrong.temperature["D1"] == alone.temperature["D1"]  # the other tasks keep the source's own
