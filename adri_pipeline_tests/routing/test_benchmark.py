"""End to end on the project's own sample, and the real pt-BR intents when present."""

import json

import pytest

from adri_pipeline.routing.benchmark import RunConfig, build
from adri_pipeline.routing.report import run_and_report
from adri_pipeline.warehouse import Warehouse
from adri_pipeline_tests.conftest import shared


def test_sample_benchmark_writes_report_plots_and_tables(tmp_path):
    config = RunConfig(dataset="sample", runs=3, warmup=2)
    warehouse = Warehouse(tmp_path / "w.duckdb")
    report = run_and_report(config, ["embedded-zeroshot", "embedded-logreg"], warehouse, tmp_path / "out")
    text = report.read_text(encoding="utf-8")
    for needle in ("| embedded-logreg | D1 |", "H1: not evaluated", "H2:", "H3:", "latency p50/p95/p99"):
        assert needle in text
    assert (tmp_path / "out" / "reliability_D1.png").stat().st_size > 10_000
    assert (tmp_path / "out" / "coverage_accuracy_D1.png").stat().st_size > 10_000
    figures = json.loads((tmp_path / "out" / "metrics.json").read_text())
    d1 = figures["results"]["embedded-logreg"]["tasks"]["D1"]
    assert 0 <= d1["ece"] <= 1 and 0 <= d1["aurc"] <= 1
    assert d1["n"] == sum(1 for e in build(config).in_split("test") if e.task == "D1")
    metrics = warehouse.query("SELECT DISTINCT candidate FROM routing_metrics ORDER BY 1")
    assert metrics["candidate"].to_list() == ["embedded-logreg", "embedded-zeroshot"]
    runs = warehouse.query("SELECT DISTINCT run_config FROM routing_predictions")
    assert json.loads(runs["run_config"][0])["seed"] == 13


@pytest.mark.slow
def test_real_pt_br_intents_logreg_beats_zeroshot_on_macro_f1(tmp_path):
    shared("routing/ohf_intents")
    config = RunConfig(dataset="ha-pt-BR", runs=3)
    run_and_report(config, ["embedded-zeroshot", "embedded-logreg"], Warehouse(tmp_path / "w.duckdb"), tmp_path)
    results = json.loads((tmp_path / "metrics.json").read_text())["results"]
    assert results["embedded-logreg"]["tasks"]["D1"]["macro_f1"] > results["embedded-zeroshot"]["tasks"]["D1"]["macro_f1"]
