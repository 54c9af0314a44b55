"""Datasets (routing/datasets.py): what joins a fit besides its source's dev split."""

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from adri_pipeline.config import DATA
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.routing.canonical import load_canonical
from adri_pipeline.routing.datasets import build, with_external_test
from adri_pipeline.routing.protocol import TEAM_TRAINING, RunConfig


def test_the_teams_turns_join_dev_only_weighing_three_times_the_sources_own():
    alone = build(RunConfig(dataset="sample", extra_training=[]))
    joined = build(RunConfig(dataset="sample"))
    assert joined.test_hash == alone.test_hash  # the frozen test split is the source's, untouched
    for split in ("calibration", "test"):
        assert [e.id for e in joined.in_split(split)] == [e.id for e in alone.in_split(split)]
    team = {e.id for path in TEAM_TRAINING for e in load_canonical(Path(path))}
    added = [e for e in joined.in_split("dev") if e.id in team]
    # the team's 293 turns and thirteen outside authors' 120 each
    assert len(added) == len(team) == sum(joined.extra_training.values()) == 293 + 13 * 120
    own_d2 = sum(e.task == "D2" for e in alone.in_split("dev"))
    assert RunConfig().extra_training_weight == 3.0
    assert sum(joined.fit_weight[e.id] for e in added) == pytest.approx(3 * own_d2)
    once = build(RunConfig(dataset="sample", extra_training_weight=1.0))
    assert sum(once.fit_weight[e.id] for e in added) == pytest.approx(own_d2)
    assert not any(e.id in joined.fit_weight for e in alone.examples)


def test_a_file_adds_only_the_tasks_its_source_has_and_never_itself(tmp_path):
    own = str(DATA / "routing" / "team_d2_2026-12-02.jsonl")
    itself = build(RunConfig(dataset=own))  # the dataset is one of the team's files: not added twice
    assert "team_d2_2026-12-02.jsonl" not in itself.extra_training
    assert Counter(e.id for e in itself.examples).most_common(1)[0][1] == 1
    d1_only = tmp_path / "d1_only.jsonl"
    sample_d1 = [e for e in build(RunConfig(dataset="sample", extra_training=[])).examples if e.task == "D1"]
    d1_only.write_text("".join(e.model_dump_json(exclude_none=True) + "\n" for e in sample_d1), encoding="utf-8")
    assert build(RunConfig(dataset=str(d1_only))).extra_training == {}  # D2 turns teach a D1-only source nothing


def test_a_missing_extra_file_is_named_and_a_trained_on_file_is_refused_as_a_test():
    with pytest.raises(RoutingConfigError, match="extra training file /nowhere/turns.jsonl does not exist"):
        build(RunConfig(dataset="sample", extra_training=["/nowhere/turns.jsonl"]))
    fitted = build(RunConfig(dataset="sample"))
    trained_on = DATA / "routing" / "team_d2_2026-12-03.jsonl"
    with pytest.raises(RoutingConfigError, match="a file it also learns from"):
        with_external_test(fitted, load_canonical(trained_on), "file-team_d2_2026-12-03")
    alone = replace(fitted, examples=[e for e in fitted.examples if e.id not in fitted.fit_weight])
    assert with_external_test(alone, load_canonical(trained_on)).in_split("test")


def test_extra_training_is_the_teams_turns_unless_told_otherwise(tmp_path):
    from adri_pipeline.config import Settings
    from adri_pipeline.routing.service import config_for, extra_training

    assert extra_training("team") == list(TEAM_TRAINING) and extra_training("none") == []
    assert extra_training("a.jsonl, b.jsonl") == ["a.jsonl", "b.jsonl"]
    settings = Settings.load(warehouse=str(tmp_path / "w.duckdb"), routing_extra_training="none")
    assert config_for(settings).extra_training == []
    assert config_for(Settings.load(warehouse=str(tmp_path / "w.duckdb"))).extra_training == list(TEAM_TRAINING)


def test_the_report_says_dev_holds_the_teams_turns_and_says_nothing_without_them():
    from adri_pipeline.routing.departures import departures

    said = departures(build(RunConfig(dataset="sample")), RunConfig(dataset="sample"), {})
    assert any(d.startswith("Dev also holds 1853 examples from other files (handwritten_d2.jsonl (40)") for d in said)
    alone = RunConfig(dataset="sample", extra_training=[])
    assert not any(d.startswith("Dev also holds") for d in departures(build(alone), alone, {}))


def test_leave_intents_out_keeps_a_fifth_of_the_intents_out_of_every_fitted_split(tmp_path):
    """Issue 56, item 5: `<source>-unseen-intents`. No dev or calibration example of any task reads a
    left-out intent (as gold, option or utterance); each left-out utterance is a test D1 request among
    the kept intents, out of scope, tagged so the report reads it apart."""
    from adri_pipeline.jev.examples import NO_MATCH
    from adri_pipeline.routing.composition import UNSEEN_TAG
    from adri_pipeline.routing.datasets import build, load_source
    from adri_pipeline.routing.protocol import RunConfig

    utterances, _ = load_source("sample")
    dataset = build(RunConfig(dataset="sample-unseen-intents"), tmp_path)
    left_out = [e for e in dataset.examples if UNSEEN_TAG in e.metadata.adversarial]
    unseen_texts = {e.utterance for e in left_out}
    intents = {u.intent for u in utterances if u.intent != NO_MATCH}
    unseen = {u.intent for u in utterances if u.text in unseen_texts} & intents
    assert len(unseen) == round(0.2 * len(intents)) and left_out
    assert all(
        dataset.split_of[e.id] == "test" and e.task == "D1" and e.gold_label == NO_MATCH and not unseen & set(e.options)
        for e in left_out
    )
    fitted = [e for e in dataset.examples if dataset.split_of[e.id] != "test"]
    unseen_utterances = {u.text for u in utterances if u.intent in unseen}
    for example in fitted:
        labels = set(example.gold_label) if isinstance(example.gold_label, list) else {example.gold_label}
        assert not unseen & (set(example.options) | labels | set(example.state.eligible_intents))
        assert example.utterance not in unseen_utterances
    assert build(RunConfig(dataset="sample-unseen-intents"), tmp_path).test_hash == dataset.test_hash  # frozen
