"""Replays over the real labelled data in ../shared/data/mirror (skipped when absent)."""

import csv
import itertools
import json
import sys

import pytest

from adri_pipeline.mirror.replay import (
    article_present,
    html_rule,
    page_type_rule,
    replay_html,
    replay_page_type,
)
from adri_pipeline_tests.conftest import shared


def test_rules_on_hand_made_states():
    assert page_type_rule({"url": "x/press-releases/1", "http_response": "200", "titulo": "Arrest made",
                           "descricao": "", "cabecalhos": ""}) == "media_bulletins"
    assert page_type_rule({"url": "x/a.jpg", "http_response": "404", "titulo": "", "descricao": "",
                           "cabecalhos": ""}) == "poor_data_source"
    assert html_rule({"visible_chars": 200, "script_chars": 90_000}) == "nao"
    assert article_present("um dois tres quatro cinco seis sete oito nove dez",
                           "<p>Um dois três? não: um dois tres quatro cinco seis sete oito nove dez</p>")


def test_html_replay_logs_every_page_with_truth_and_returns_the_rules_answers(tmp_path):
    folder = shared("mirror/article_extraction")
    summary = replay_html(tmp_path / "html.jsonl", folder)
    records = [json.loads(line) for line in (tmp_path / "html.jsonl").read_text().splitlines()]
    assert summary["decisions"] == summary["returned_rule_answers"] == len(records) == 181
    assert summary["dropped"] == 0
    assert {r["truth"] for r in records} <= {"sim", "nao"} and all(r["mirror_decision"] for r in records)


def pdap_subset(folder, records: int):
    """The first `records` PDAP rows, kept in the test's temporary folder only (never in the repository)."""
    source = shared("mirror/pdap/labeled-urls-headers_all.csv")
    subset = folder / "pdap.csv"
    csv.field_size_limit(sys.maxsize)
    with source.open(encoding="utf-8", newline="") as f, subset.open("w", encoding="utf-8", newline="") as out:
        reader = csv.DictReader(f)
        writer = csv.DictWriter(out, fieldnames=reader.fieldnames)
        writer.writeheader()
        writer.writerows(itertools.islice(reader, records))
    return subset


@pytest.mark.slow
def test_page_type_replay_holds_out_whole_sites(tmp_path):
    summary = replay_page_type(tmp_path / "page.jsonl", pdap_subset(tmp_path, 300))
    records = [json.loads(line) for line in (tmp_path / "page.jsonl").read_text().splitlines()]
    assert len(records) == summary["decisions"] and summary["trained_on"] + summary["decisions"] <= 300
    assert all(r["truth"] and r["mirror_decision"] and 0 <= r["probability"] <= 1 for r in records)


# one fault in the front door, the other three in the slow suite (each is a server and a replay, ~10 s)
@pytest.mark.parametrize("fault", ["nan", *(pytest.param(f, marks=pytest.mark.slow)
                                            for f in ("noul-range", "extra-answer", "boolean-type"))])
def test_replay_against_a_server_that_breaks_the_spec_exits_0_and_the_rule_decides(tmp_path, fault):
    """`adri mirror replay --point html_is_enough --mirror jev:<url>` against jevcompat's mock breaking an
    answer: every answer discarded, said so, every decision the rule's, exit 0."""
    import subprocess

    from loopback.systemone_servers import BIN, jevcompat_mock

    shared("mirror/article_extraction")
    with jevcompat_mock(fault) as url:
        done = subprocess.run([str(BIN / "adri"), "mirror", "replay", "--point", "html_is_enough", "--mirror",
                               f"jev:{url}", "--warehouse", str(tmp_path / "w.duckdb")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[0].rsplit(" ", 2)[0])
    assert summary["discarded_answers"] == summary["decisions"] == summary["returned_rule_answers"] == 181
    assert "were discarded; the rule decided those" in done.stderr
