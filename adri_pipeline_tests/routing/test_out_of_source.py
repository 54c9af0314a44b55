"""Out-of-source tests (routing/out_of_source.py): which sets, what they declare, and the report's
first table with each threshold's bound beside the rate observed."""

import hashlib
from dataclasses import replace

import pytest

from adri_pipeline.config import DATA
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.routing.datasets import SHARED_ROUTING, build
from adri_pipeline.routing.out_of_source import (
    OutsideSet,
    calibration_sources,
    certification_sources,
    outside_set,
    shipped_sources,
    sources_for,
)
from adri_pipeline.routing.protocol import TEAM_TRAINING, RunConfig

HELD_OUT = DATA / "routing" / "heldout"
SEALED = DATA / "routing" / "sealed"  # outside authors' sets, each committed with its hash before any model ran
OUTSIDE_AUTHORS = DATA / "routing" / "outside_authors"  # outside authors' turns written as fit data


@pytest.mark.parametrize(
    "folder", [HELD_OUT, SEALED, OUTSIDE_AUTHORS], ids=["team held-out", "outsider sealed", "outside authors"]
)
def test_the_hand_written_turns_are_the_ones_committed_with_their_hash(folder):
    """Committed with their hash as their authors wrote them (the test sets before any model ran on them): an
    edit would make them different data."""
    lines = (folder / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    assert {line.split()[1] for line in lines} == {path.name for path in folder.glob("*.jsonl")}
    for line in lines:
        digest, name = line.split()
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
    assert str(SEALED) not in shipped_sources("sample")  # run once, on purpose, never by default


def test_shipped_sources_are_every_other_source_and_the_projects_test_files():
    sources = shipped_sources("sample")
    assert "sample" not in sources
    assert str(HELD_OUT) in sources
    for trained_on in TEAM_TRAINING:  # read while tuning: every fit learns from them, so they test nothing
        assert trained_on not in sources
    assert "sample" in shipped_sources("ha-pt-BR")
    assert sources_for("none", "sample", ["x.jsonl"]) == ["x.jsonl"]
    assert sources_for("sgd, ha-pt", "sample", ["sgd"]) == ["sgd", "ha-pt"]
    # the fit source named among them is its own test split, not out of source (failed before: a row
    # "ha-pt-BR" beside "in source" in a ha-pt-BR fit's report)
    assert sources_for("ha-pt-BR,ha-pt", "ha-pt-BR", []) == ["ha-pt"]


def test_the_threshold_is_certified_on_the_built_in_sources_out_of_source_chose(tmp_path):
    """`--out-of-source` chooses what a run pays for: the demo's project files alone (or `none`) calibrate
    on the fit source alone, as on a machine without ../shared/data (before: every other source's
    calibration split was answered whatever was chosen)."""
    from adri_pipeline.config import Settings
    from adri_pipeline.routing.service import config_for

    def chosen(out_of_source):
        settings = Settings(warehouse=tmp_path / "adri.duckdb", routing_out_of_source=out_of_source)
        return config_for(settings, piloted=False).threshold_sources

    assert chosen("none") == [] and chosen(str(HELD_OUT)) == []
    assert chosen(f"ha-pt-BR,{HELD_OUT}") == ["ha-pt-BR"]
    assert set(chosen("shipped")) == {s for s in shipped_sources("sample") if s != str(HELD_OUT)}
    assert calibration_sources(RunConfig(dataset="sample", threshold_sources=[]), [], tmp_path) == {}


def test_a_set_keeps_the_tasks_fitted_declares_who_wrote_it_and_only_a_built_in_source_is_capped(tmp_path):
    config = RunConfig(dataset="sample", out_of_source_per_task=10)
    held_out = outside_set(str(HELD_OUT), config, {"D1", "D2"}, set(), tmp_path)
    # a file is read whole (failed before: 10 of its 125 turns, and 100 of 125 by default)
    assert held_out.name == "file-heldout" and held_out.available == 125 and len(held_out.examples) == 125
    assert held_out.origins == {"D2": "synthetic"}
    assert "by hand, 2026-12-04, before any model was run on it" in held_out.label("D2")
    assert outside_set(str(HELD_OUT), config, {"D1"}, set(), tmp_path) is None  # no D1 in it
    assert (tmp_path / "file-heldout.test.sha256").exists()  # frozen like any test split
    sample = outside_set("sample", replace(config, dataset="ha-pt-BR"), {"D2"}, set(), tmp_path)
    assert sample.available > 10 and len(sample.examples) == 10  # a built-in test split is drawn


def test_a_conversation_also_in_the_fit_data_is_not_out_of_source(tmp_path):
    file = DATA / "routing" / "handwritten_d2.jsonl"
    group = file.read_text(encoding="utf-8").split('"group_id": "', 1)[1].split('"', 1)[0]
    with pytest.raises(RoutingConfigError, match=f"conversation '{group}' is also in the data"):
        outside_set(str(file), RunConfig(), {"D2"}, {group}, tmp_path)
    with pytest.raises(RoutingConfigError, match="not a built-in dataset"):
        outside_set(str(tmp_path / "missing.jsonl"), RunConfig(), {"D2"}, set(), tmp_path)


def _assert_the_headline_is_risk_and_coverage(text: str, result) -> None:
    """The headline is risk and coverage, in source and out of source (issue 56; failed before: no such
    section), with the candidate's verdict and its prediction sets on D2."""
    headline = text.split("## Risk and coverage", 1)[1].split("## In source and out of source", 1)[0]
    assert text.index("## Risk and coverage") < text.index("## In source and out of source")
    assert "| embedded-zeroshot | D2 | file-handwritten_d2 (synthetic" in headline
    assert "wrong at 40%" in headline and "answered@thr" in headline
    assert "- **embedded-zeroshot" in headline  # its verdict on what the threshold answers
    assert ("safe but mute" in headline) == bool(result.mute_out_of_source)
    sets = headline.split("### Prediction sets", 1)[1]
    assert "| embedded-zeroshot | D2 | in source | 90% |" in sets and "| embedded-zeroshot | D4 |" not in sets
    d2_sets = result.out_of_source["file-handwritten_d2"]["D2"].prediction_sets
    assert d2_sets is not None and d2_sets.answered + d2_sets.asked + d2_sets.abstained == pytest.approx(1.0)
    # the handwritten turns are one catalogue (the sample's home agents): no interval over catalogues
    assert d2_sets.coverage_across_catalogues.catalogues == 1 and "(1 catalogue: too few for an interval)" in sets


@pytest.mark.slow  # a whole benchmark run (about 30 s): .ci/run runs the slow tests
def test_the_report_puts_in_source_and_out_of_source_side_by_side_with_the_bound(tmp_path):
    from adri_pipeline.config import Settings
    from adri_pipeline.routing import service

    settings = Settings.load(
        warehouse=str(tmp_path / "w.duckdb"),
        routing_candidates="embedded-zeroshot",
        routing_out_of_source=str(DATA / "routing" / "handwritten_d2.jsonl"),
        routing_extra_training="none",
        routing_performance_runs=0,
    )
    run = service.benchmark(settings)
    text = run.report.read_text(encoding="utf-8")
    _assert_the_headline_is_risk_and_coverage(text, run.results["embedded-zeroshot"])
    first_table = text.split("## In source and out of source", 1)[1].split("###", 1)[0]
    assert "| embedded-zeroshot | D2 | in source |" in first_table
    assert (
        "| embedded-zeroshot | D2 | file-handwritten_d2 (synthetic, adri-pipeline authors, by hand; read while "
        "tuning on 2026-12-01) | 40 |" in first_table
    )
    # a candidate below the majority class is flagged where it is (failed before: nothing said so)
    rows = [line.split(" | ") for line in first_table.splitlines() if line.startswith("| embedded-zeroshot |")]
    assert rows
    for row in rows:
        accuracy, majority = float(row[4].split()[0]), float(row[5])
        assert ("below majority" in row[4]) == (accuracy < majority), row
    flagged = [row for row in rows if "below majority" in row[4]]
    assert flagged  # on the sample, zero-shot's exact D4 sets (0.059) against the most frequent set (0.118)
    assert "**Below the majority class**" in first_table and "embedded-zeroshot on D4 (in source)" in first_table
    result = run.results["embedded-zeroshot"]
    assert set(result.out_of_source) == {"file-handwritten_d2"}
    assert set(result.out_of_source["file-handwritten_d2"]) == {"D2"}
    assert "### The abstention threshold's bound" in text and "exchangeable with a calibration split" in text
    # --out-of-source chose a file and no built-in source: certified on the fit source's calibration alone
    assert "other sources: " not in text
    h2 = run.hypotheses["embedded-zeroshot"].H2
    assert set(h2.out_of_source) == {"file-handwritten_d2"} and h2.verdict.startswith(h2.in_source)
    assert result.drift_alarm_share["in source"] <= result.drift_alarm_share["file-handwritten_d2"]
    stored = (
        service.Warehouse(settings.warehouse)
        .query("SELECT DISTINCT test_set FROM routing_predictions ORDER BY ALL")["test_set"]
        .to_list()
    )
    assert stored == ["file-handwritten_d2", "in source"]


@pytest.mark.skipif(not SHARED_ROUTING.exists(), reason="SGD's dialogues are read from ../shared/data")
def test_d2s_threshold_is_certified_on_each_other_sources_dev_split_one_decision_per_conversation(tmp_path):
    """Before, on their calibration splits capped at 100: 62-100 D2 decisions, where one wrong answer among
    the most confident set the threshold for every fit. A candidate fitted on the sample never fitted on
    SGD's dev split; the test splits stay test sets, and four D2 turns of one dialogue are one decision.
    The other tasks stay on the calibration split (on the dev splits the sample fit's D4 threshold
    answered 88 % of its own test split, 41 % wrongly). Fitted on SGD and the team's Portuguese turns,
    its D2 is certified on ha-pt's dev split."""
    config = RunConfig(dataset="sgd", threshold_sources=["ha-pt"])
    fitted = build(config, tmp_path).examples
    [(name, certifying)] = certification_sources(config, fitted, tmp_path).items()
    other = build(RunConfig(dataset="ha-pt", extra_training=[]), tmp_path)
    d2 = [e for e in certifying if e.task == "D2"]
    splits = {(e.task, other.split_of[e.id]) for e in certifying}
    assert name == "ha-pt" and ("D2", "dev") in splits and ("D2", "calibration") not in splits
    assert {split for task, split in splits if task != "D2"} == {"calibration"}
    assert len({e.group_id for e in d2}) == len(d2) > 100  # one per conversation, more than the old cap
    conversations = {e.group_id for e in other.in_split("dev") if e.task == "D2"}
    assert len(d2) == min(len(conversations), config.certification_per_task)
    assert len(calibration_sources(config, fitted, tmp_path)["ha-pt"]) <= 4 * config.out_of_source_per_task


@pytest.mark.skipif(not SHARED_ROUTING.exists(), reason="SGD's dialogues are read from ../shared/data")
def test_d2_is_certified_only_on_decisions_in_a_language_the_candidate_was_fitted_in(tmp_path):
    """Fitted on Portuguese (the sample and the team's turns), D2's threshold is no longer certified on SGD's
    English dialogues, which alone set it (0.92-0.95, each Portuguese source 0.71-0.87); SGD's other tasks
    still certify theirs, and the bound names the language it speaks for."""
    from adri_pipeline.routing.out_of_source import languages_of

    config = RunConfig(dataset="sample", threshold_sources=["sgd", "ha-pt"])
    fitted = build(config, tmp_path).examples
    certifying = certification_sources(config, fitted, tmp_path)
    assert languages_of([e for e in fitted if e.task == "D2"]) == {"pt"}
    assert not [e for e in certifying["sgd"] if e.task == "D2"] and {e.task for e in certifying["sgd"]} == {"D1", "D4"}
    assert [e for e in certifying["ha-pt"] if e.task == "D2"]
    english = build(RunConfig(dataset="sgd", threshold_sources=["sgd"]), tmp_path).examples
    assert languages_of([e for e in english if e.task == "D2"]) == {"en", "pt"}  # SGD and the team's turns


def test_a_set_in_a_language_the_d2_bound_does_not_speak_for_is_marked_in_the_report():
    """Certified for Portuguese catalogues, D2's bound makes no claim on SGD's English test split: the
    report's bound table says so beside the wrong answers observed there, and not beside a Portuguese set."""
    from types import SimpleNamespace

    from adri_pipeline.routing.report import _threshold_bounds
    from adri_pipeline.routing.thresholds import Bound

    def turns(language):
        return [SimpleNamespace(metadata=SimpleNamespace(language=language))]

    observed = {"D2": SimpleNamespace(high_confidence_wrong_rate=0.07)}
    result = SimpleNamespace(
        threshold_bounds={
            "D2": Bound(
                threshold=0.83,
                alpha=0.05,
                delta=0.1,
                calibration_n=66,
                calibration_answered=40,
                calibration_wrong=1,
                languages=["pt"],
            )
        },
        tasks=observed,
        out_of_source={"sgd": observed, "file-outsider": observed},
    )
    outside = [
        OutsideSet("sgd", turns("en"), "h", "", 1),
        OutsideSet("file-outsider", turns("pt-BR"), "h", "", 1),
    ]
    [row] = [line for line in _threshold_bounds({"static-logreg": result}, outside, "in source") if "| D2 |" in line]
    assert "sgd: 7.0% (en: outside the certificate's languages)" in row
    assert "file-outsider: 7.0%;" in row or row.rstrip(" |").endswith("file-outsider: 7.0%")
