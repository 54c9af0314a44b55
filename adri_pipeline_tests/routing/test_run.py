"""One candidate's decisions as routing/run.py records them."""

import pytest


def test_a_d4_sets_confidence_is_that_every_answer_in_it_is_right():
    """Failed before: the mean of the per-intent confidences, so fourteen sure "nao" made a set
    whose one unsure intent was wrong look 0.97 sure (ha-pt-BR D4: 57 % of sets wrong at p >= 0.85)."""
    from adri_pipeline.jev.examples import CanonicalExample
    from adri_pipeline.routing.run import _decisions

    intents = [f"i{n}" for n in range(15)]
    example = CanonicalExample(
        id="x",
        group_id="g",
        task="D4",
        state={},
        utterance="liga a luz e marca um timer",
        question="q",
        question_type="noul",
        options={i: i for i in intents},
        gold_label=["i0", "i1"],
    )
    from adri_pipeline.jev.serialize import to_request

    answers = {i: {"type": "noul", "noul": 0.01} for i in intents}
    answers["i0"] = {"type": "noul", "noul": 0.99}
    answers["i1"] = {"type": "noul", "noul": 0.45}
    response = {"model": "m", "answers": answers, "usage": {"input_tokens": 1, "output_tokens": 0}}
    row = _decisions(example, to_request(example), response)
    assert row["answer"] == "i0" and not row["correct"]
    assert row["confidence"] == pytest.approx(0.99**14 * 0.55) and row["confidence"] < 0.85


def test_the_confidence_is_tempered_off_the_sources_data_not_the_teams_turns_that_joined_dev():
    """The temperature is fitted on the source's calibration split; the team's turns in dev
    (Dataset.fit_weight) would make turns like them look familiar, and their confidence untempered."""
    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.run import prepare

    dataset = build(RunConfig(dataset="sample"))
    assert dataset.fit_weight
    calibrated, _ = prepare("static-logreg", dataset, RunConfig(dataset="sample"))
    own = {e.utterance for e in dataset.in_split("dev") if e.id not in dataset.fit_weight}
    assert calibrated.familiarity.fit.shape[0] == len(own)


def test_a_source_only_candidate_learns_without_the_teams_turns_beside_the_one_that_does(monkeypatch):
    """Issue 56, item 7: `<candidate>@source-only` is the same candidate fitted on its source's dev split
    alone, so one report shows both fits (the departure of learning from the team's turns made visible)."""
    from adri_pipeline.jev.contract import RoutingConfigError
    from adri_pipeline.routing.candidates import make_candidate
    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.embedded import StaticLogReg
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.run import prepare

    fitted_on: list[int] = []
    real_fit = StaticLogReg.fit

    def counting_fit(self, requests, *args, **kwargs):
        fitted_on.append(len(requests))
        return real_fit(self, requests, *args, **kwargs)

    monkeypatch.setattr(StaticLogReg, "fit", counting_fit)
    dataset = build(RunConfig(dataset="sample"))
    calibrated, _ = prepare("static-logreg@source-only", dataset, RunConfig(dataset="sample"), others={})
    prepare("static-logreg", dataset, RunConfig(dataset="sample"), others={})
    dev = dataset.in_split("dev")
    # the source-only one answers the team's turns as it is; the other is fitted again once per catalogue
    # fold, without that fold's turns (routing/new_catalogues.py)
    assert fitted_on[:2] == [len(dev) - len(dataset.fit_weight), len(dev)]
    team_d2 = sum(e.task == "D2" for e in dev if e.id in dataset.fit_weight)
    assert len(fitted_on) == 2 + 5 and sum(len(dev) - n for n in fitted_on[2:]) == team_d2
    assert calibrated.name == "static-logreg@source-only" and calibrated.candidate.source_only
    with pytest.raises(RoutingConfigError, match="learns nothing here"):
        make_candidate("sparrow@source-only")


def test_the_hand_written_turns_certify_per_author_when_they_have_authors_enough_else_per_catalogue():
    from adri_pipeline.jev.examples import CanonicalExample
    from adri_pipeline.routing.new_catalogues import NEW_CATALOGUES, HeldOutAnswers
    from adri_pipeline.routing.run import _tested
    from adri_pipeline_tests.routing.helpers import line

    examples = [CanonicalExample.model_validate(line(i)) for i in range(40)]
    rows = [{"correct": i % 3 > 0, "confidence": i / 40} for i in range(40)]
    ten = HeldOutAnswers(examples, [{}] * 40, 1, 5, 0.0, {e.id: f"author {i % 10}" for i, e in enumerate(examples)})
    correct, confidence, group, unit = _tested({}, rows, ten, 0.10)[NEW_CATALOGUES]
    assert unit == "author" and len(set(group)) == 10 and correct[1] and confidence[1] == 1 / 40
    eight = HeldOutAnswers(examples, [{}] * 40, 1, 5, 0.0, {e.id: f"author {i % 8}" for i, e in enumerate(examples)})
    assert _tested({}, rows, eight, 0.10)[NEW_CATALOGUES][3] == "catalogue"  # 8 authors cannot test at 0.10
    assert _tested({}, rows, eight, 0.20)[NEW_CATALOGUES][3] == "author"


def test_d2_sets_are_stated_per_author_when_the_hand_written_turns_have_authors_enough_else_pooled():
    """Failed before: D2's set quantile was pooled over the hand-written turns whatever their authors, so an
    author harder than the mix (here author 0, half of whose turns give their gold 0.5) fell below the
    stated coverage."""
    from adri_pipeline.jev import metrics
    from adri_pipeline.jev.examples import CanonicalExample
    from adri_pipeline.routing.new_catalogues import HeldOutAnswers
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.run import _set_quantile
    from adri_pipeline_tests.routing.helpers import line

    examples = [CanonicalExample.model_validate(line(i)) for i in range(200)]
    rows = [{"gold_probability": 0.5 if i % 20 == 0 else 0.9} for i in range(200)]
    config = RunConfig()
    ten = HeldOutAnswers(examples, [{}] * 200, 1, 5, 0.0, {e.id: f"author {i % 10}" for i, e in enumerate(examples)})
    assert _set_quantile([], rows, ten, config) == pytest.approx(0.5)  # author 0's own quantile: its turns covered
    eight = HeldOutAnswers(examples, [{}] * 200, 1, 5, 0.0, {e.id: f"author {i % 8}" for i, e in enumerate(examples)})
    pooled = metrics.conformal_quantile([r["gold_probability"] for r in rows], 0.10)
    assert _set_quantile([], rows, eight, config) == pooled == pytest.approx(0.1)  # 5 % of turns get 0.5: left out
    own = [{"gold_probability": 0.8}] * 30
    assert _set_quantile(own, None, None, config) == pytest.approx(0.2)


def test_an_author_too_small_to_state_its_own_quantile_is_left_out_of_d2s_sets_not_all_of_them(capsys):
    """Failed before: a team's --extra-training file of 5 turns is an author of its own; its 90 % quantile
    cannot be stated (inf), and with the rank over authors at the highest, every option was in every D2 set."""
    from adri_pipeline.jev.examples import CanonicalExample
    from adri_pipeline.routing.new_catalogues import HeldOutAnswers
    from adri_pipeline.routing.protocol import RunConfig
    from adri_pipeline.routing.run import _set_quantile
    from adri_pipeline_tests.routing.helpers import line

    examples = [CanonicalExample.model_validate(line(i)) for i in range(205)]
    rows = [{"gold_probability": 0.9} for _ in range(200)] + [{"gold_probability": 0.6}] * 5
    authors = {e.id: f"author {i % 10}" if i < 200 else "our team" for i, e in enumerate(examples)}
    eleven = HeldOutAnswers(examples, [{}] * 205, 1, 5, 0.0, authors)
    assert _set_quantile([], rows, eleven, RunConfig()) == pytest.approx(0.1)  # the ten authors' own
    assert "our team: too few hand-written turns" in capsys.readouterr().err
    # with eight authors large enough left, nothing per author can be stated: pooled over every turn
    authors = {e.id: f"author {i % 8}" if i < 200 else f"small {i}" for i, e in enumerate(examples)}
    nine = HeldOutAnswers(examples, [{}] * 205, 1, 5, 0.0, authors)
    assert _set_quantile([], rows, nine, RunConfig()) == pytest.approx(0.1)
    assert "pooled over the turns" in capsys.readouterr().err
