"""The docs' "Measured here" tables written from a run's metrics.json (routing/measured.py)."""

import re
import subprocess
from pathlib import Path

from adri_pipeline.cli import main
from adri_pipeline.routing.measured import END, begin, provenance
from adri_pipeline.routing.results import H1, H2, H3, BenchmarkReport, CandidateResult, Hypotheses

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _figures(accuracy: float, majority: float) -> dict:
    return {
        "n": 19,
        "accuracy": accuracy,
        "majority_baseline_accuracy": majority,
        "high_confidence_wrong_rate": 0.0,
        "high_confidence_wrong_rate_fixed": 0.0,
        "ece": 0.1,
        "mce": 0.2,
        "aurc": 0.1,
        "coverage_at_threshold": 1.0,
        "selective_accuracy_at_threshold": 1.0,
        "reliability": [],
    }


def _result(batching: str) -> CandidateResult:
    """Sparrow's figures on two tasks, D2's below its majority class, measured three times."""
    performance = {
        "independent_runs": 3,
        "runs": [],
        "load_seconds": 1.0,
        "warmup_seconds": 0.1,
        "peak_rss_mb": 200.0,
        "artifact_mb": 2.0,
        "production_batch": 1,
        "batch_chosen_by": "pilot",
        "throughput_per_s": {"batch 1": 300.0},
        "shape": "a shape",
        "hourly_usd": 0.06,
        "price_table": "prices.toml",
        "cost_per_1000_usd": {"batch 1": 0.0001},
    }
    result = CandidateResult(
        candidate="sparrow",
        kind={"batching": batching},
        tasks={"D1": _figures(0.9, 0.128), "D2": _figures(0.105, 0.421)},
        by_origin={},
        slices={},
        temperature={},
        abstention_threshold={},
        discarded_answers=0,
        discarded_reasons={},
        error_causes={},
        abstention_d3_vs_confidence={},
        latency_ms={"p50": 3.04, "p95": 14.8},
        latency_per_turn_ms_percentiles={"p95": 14.36},
        performance=performance,
        cost_per_1000_usd=0.0001,
        fit_seconds=0.1,
    )
    return result


def _run(folder: Path, batching: str) -> None:
    """A metrics.json as `adri routing run` writes it, with two tasks and one candidate."""
    verdicts = Hypotheses(
        H1=H1(verdict="not evaluated"),
        H2=H2(verdict="not evaluated", min_coverage=0.5),
        H3=H3(
            verdict="met",
            p95_per_turn_ms=14.36,
            target_p95_ms=50.0,
            cost_per_1000_usd=0.0001,
            shape="a shape",
            compared_with_cost_per_1000_usd=0.01,
            compared_with="stated price",
            independent_runs=3,
        ),
    )
    folder.mkdir(parents=True)
    BenchmarkReport(
        config={"runs": 3},
        test_hash="d9" * 32,
        results={"sparrow": _result(batching)},
        hypotheses={"sparrow": verdicts},
        annotator_agreement={},
        departures=[],
        measured={"date": "2026-12-02 17:00 UTC", "commit": "abc123def456", "cores": 2},
    ).write(folder / "metrics.json")


def test_the_table_is_written_between_its_markers_and_nothing_else_changes(tmp_path, capsys):
    _run(tmp_path / "routing" / "sample", batching="in_process")
    doc = tmp_path / "page.md"
    # a marker quoted in a sentence is not the block (failed before: the table replaced the sentence)
    before = f"# Page\n\nkept <!-- a comment -->, and `{begin('sample')}` quoted in prose\n\n"
    after = "\n\nafter the table, kept\n"
    doc.write_text(before + begin("sample") + "\n| stale | 0.158 |\n" + END + after, encoding="utf-8")
    argv = ["routing", "table", "--warehouse", str(tmp_path / "adri.duckdb"), "--doc", str(doc)]
    assert main(argv) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith(before) and text.endswith(after) and "stale" not in text
    assert "from the run of 2026-12-02 17:00 UTC, commit `abc123def456`, 2 cores" in text
    assert "test split sha256 `d9d9d9d9d9d9d9d9…`" in text
    assert "| `sparrow` | no | 0.900 | 0.105 ⚠ | 3.0 / 14.8 | 14.4 ms | **met** |" in text
    assert "D2 accuracy (majority 0.421)" in text
    assert main(argv) == 0 and doc.read_text(encoding="utf-8") == text  # written again: the same page


def test_a_doc_without_the_markers_is_refused_and_left_as_it_was(tmp_path, capsys):
    _run(tmp_path / "routing" / "sample", batching="server")
    doc = tmp_path / "page.md"
    doc.write_text("# Page\n\n| typed | 0.158 |\n", encoding="utf-8")
    assert main(["routing", "table", "--warehouse", str(tmp_path / "adri.duckdb"), "--doc", str(doc)]) == 2
    assert f"{doc}: no block `<!-- measured: routing sample -->`" in capsys.readouterr().err
    assert doc.read_text(encoding="utf-8") == "# Page\n\n| typed | 0.158 |\n"
    assert main(["routing", "table", "--warehouse", str(tmp_path / "none" / "adri.duckdb")]) == 2
    assert "run `adri routing run --dataset sample` first" in capsys.readouterr().err


def test_a_run_records_the_commit_it_ran_on():
    here = Path(__file__).resolve().parent
    head = subprocess.run(
        ["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    recorded = provenance()
    assert recorded["commit"].removesuffix("+changes") == head
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", recorded["date"])


def test_every_measured_table_in_the_docs_was_written_by_the_command():
    """A table inside the markers says the run's date, commit and test split: typed figures have none."""
    blocks = [
        (page.name, block)
        for page in DOCS.glob("*.md")
        for block in re.findall(
            r"^<!-- measured: routing \S+ -->$(.*?)^<!-- /measured -->$", page.read_text(), re.S | re.M
        )
    ]
    assert any(name == "jev-wire.md" for name, _ in blocks)
    for name, block in blocks:
        assert re.search(
            r"Written by `adri routing table --dataset \S+` from the run of .+, "
            r"commit `[0-9a-f]{12}(\+changes)?`",
            block,
        ), name
