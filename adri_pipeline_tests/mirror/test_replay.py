"""Replays over the real labelled data in ../shared/data/mirror (skipped when absent)."""

import json

import pytest

from adri_pipeline.mirror.replay import (
    article_present,
    html_rule,
    page_type_rule,
    replay_html,
    replay_page_type,
)
from adri_pipeline_tests.conftest import shared
from adri_pipeline_tests.mirror.helpers import pdap_subset


def test_rules_on_hand_made_states():
    assert (
        page_type_rule(
            {
                "url": "x/press-releases/1",
                "http_response": "200",
                "titulo": "Arrest made",
                "descricao": "",
                "cabecalhos": "",
            }
        )
        == "media_bulletins"
    )
    assert (
        page_type_rule({"url": "x/a.jpg", "http_response": "404", "titulo": "", "descricao": "", "cabecalhos": ""})
        == "poor_data_source"
    )
    assert html_rule({"visible_chars": 200, "script_chars": 90_000}) == "nao"
    assert article_present(
        "um dois tres quatro cinco seis sete oito nove dez",
        "<p>Um dois três? não: um dois tres quatro cinco seis sete oito nove dez</p>",
    )


def test_html_replay_logs_every_page_with_truth_and_returns_the_rules_answers(tmp_path):
    folder = shared("mirror/article_extraction")
    summary = replay_html(tmp_path / "html.jsonl", folder)
    records = [json.loads(line) for line in (tmp_path / "html.jsonl").read_text().splitlines()]
    assert summary["decisions"] == summary["returned_rule_answers"] == len(records) == 181
    assert summary["dropped"] == 0
    assert {r["truth"] for r in records} <= {"sim", "nao"} and all(r["mirror_decision"] for r in records)


@pytest.mark.slow
def test_page_type_replay_holds_out_whole_sites(tmp_path):
    summary = replay_page_type(tmp_path / "page.jsonl", pdap_subset(tmp_path, 300))
    records = [json.loads(line) for line in (tmp_path / "page.jsonl").read_text().splitlines()]
    assert len(records) == summary["decisions"] and summary["trained_on"] + summary["decisions"] <= 300
    assert all(r["truth"] and r["mirror_decision"] and 0 <= r["probability"] <= 1 for r in records)


# one fault in the front door, the other three in the slow suite (each is a server and a replay, ~10 s)
@pytest.mark.parametrize(
    "fault", ["nan", *(pytest.param(f, marks=pytest.mark.slow) for f in ("noul-range", "extra-answer", "boolean-type"))]
)
def test_replay_against_a_server_that_breaks_the_spec_exits_0_and_the_rule_decides(tmp_path, fault):
    """`adri mirror replay --point html_is_enough --mirror jev:<url>` against jevcompat's mock breaking an
    answer: every answer discarded, said so, every decision the rule's, exit 0."""
    import subprocess

    from loopback.systemone_servers import BIN, jevcompat_mock

    shared("mirror/article_extraction")
    with jevcompat_mock(fault) as url:
        done = subprocess.run(
            [
                str(BIN / "adri"),
                "mirror",
                "replay",
                "--point",
                "html_is_enough",
                "--mirror",
                f"jev:{url}",
                "--warehouse",
                str(tmp_path / "w.duckdb"),
            ],
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[0].rsplit(" ", 2)[0])
    assert summary["discarded_answers"] == summary["decisions"] == summary["returned_rule_answers"] == 181
    assert "were discarded; the rule decided those" in done.stderr


def _synthetic_cases(count: int):
    """**Synthetic** pages: structural facts only, truth alternating."""
    from adri_pipeline.mirror.replay import ReplayCase

    return [
        ReplayCase(
            {
                "page_id": f"p{n}",
                "html_chars": 9000,
                "visible_chars": 1000 + 100 * n,
                "script_chars": 50,
                "paragraphs": 4,
                "json_ld": False,
                "next_data": False,
            },
            "sim" if n % 2 else "nao",
            f"p{n}",
        )
        for n in range(count)
    ]


def test_a_replay_against_a_mute_mirror_ends_promptly_and_its_progress_line_never_claims_done(tmp_path, capsys):
    """Failed before: against a server that takes connections and never answers, the replay's progress
    line reached 181/181 at once (it counted cases handed to the gate) and the replay then waited one
    timeout per case, ~6 minutes, before ending with exit 0. Now the line counts shadow records written
    and the replay stops after SILENT_AFTER timeouts in a row, saying so."""
    import time

    from adri_pipeline.mirror.gate import systemone_mirror
    from adri_pipeline.mirror.replay import HTML_POINT, SILENT_AFTER, MirrorSilent, replay
    from adri_pipeline.mirror.shadow_log import ShadowLog
    from loopback.systemone_servers import mute_server

    point = HTML_POINT.model_copy(update={"timeout_s": 0.5})
    cases = _synthetic_cases(40)  # 40 x 0.5 s = 20 s had each case waited out its timeout
    with mute_server() as url:
        started = time.perf_counter()
        with pytest.raises(MirrorSilent, match=f"answered none of {SILENT_AFTER} calls in a row"):
            replay(
                "html_is_enough",
                point,
                cases,
                html_rule,
                systemone_mirror(f"jev:{url}", 0.5),
                ShadowLog(tmp_path / "s.jsonl"),
                f"jev:{url}",
            )
        elapsed = time.perf_counter() - started
    assert elapsed < (SILENT_AFTER + 3) * point.timeout_s + 3, elapsed  # its timeouts and the gate's close
    progress = capsys.readouterr().err
    assert "replaying html_is_enough" in progress and "40/40" not in progress, progress
    records = (tmp_path / "s.jsonl").read_text().splitlines()
    assert SILENT_AFTER <= len(records) < len(cases)


def test_a_replay_through_an_answering_mirror_counts_records_not_cases_handed_over(tmp_path, capsys):
    """The progress line ends at the records written, which are all the cases; every case has its record."""
    from adri_pipeline.mirror.replay import HTML_POINT, HtmlMirror, replay
    from adri_pipeline.mirror.shadow_log import ShadowLog

    cases = _synthetic_cases(30)
    summary = replay("html_is_enough", HTML_POINT, cases, html_rule, HtmlMirror(cases), ShadowLog(tmp_path / "s.jsonl"))
    assert summary["decisions"] == summary["returned_rule_answers"] == 30 and summary["dropped"] == 0
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 30
    assert "30/30" in capsys.readouterr().err


@pytest.mark.slow  # real data and a process: ~30 s; the synthetic test above is the front door's
def test_adri_mirror_replay_against_a_mute_server_exits_2_within_seconds_naming_it(tmp_path):
    """The README's replay with `--mirror jev:<url>` on a mute server: failed before (exit 0 after ~6
    minutes, the progress line at 181/181 all along)."""
    import subprocess
    import time

    from loopback.systemone_servers import BIN, mute_server

    shared("mirror/article_extraction")
    with mute_server() as url:
        started = time.perf_counter()
        done = subprocess.run(
            [
                str(BIN / "adri"),
                "mirror",
                "replay",
                "--point",
                "html_is_enough",
                "--mirror",
                f"jev:{url}",
                "--warehouse",
                str(tmp_path / "w.duckdb"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        elapsed = time.perf_counter() - started
    assert done.returncode == 2, done.stderr
    assert f"error: mirror jev:{url} answered none of 3 calls in a row" in done.stderr
    assert "181/181" not in done.stderr and "Traceback" not in done.stderr
    assert elapsed < 60, elapsed  # 3 timeouts of 2 s and the reading of the data, not 181 of them
