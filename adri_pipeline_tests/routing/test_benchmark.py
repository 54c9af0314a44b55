"""End to end on the project's own sample, and the real pt-BR intents when present."""

import json

import pytest

from adri_pipeline.routing.benchmark import RunConfig, build
from adri_pipeline.routing.service import run_benchmark
from adri_pipeline.warehouse import Warehouse
from adri_pipeline_tests.conftest import shared


def test_sample_benchmark_writes_report_plots_and_tables(tmp_path):
    # quality only: the performance runs are test_performance's (each run a process costs seconds)
    config = RunConfig(dataset="sample", runs=0)
    warehouse = Warehouse(tmp_path / "w.duckdb")
    report = run_benchmark(config, ["embedded-zeroshot", "embedded-logreg"], warehouse, tmp_path / "out").report
    text = report.read_text(encoding="utf-8")
    for needle in ("| embedded-logreg | D1 |", "H1: not evaluated", "H2:", "H3:", "ms per decision p50/p95/p99"):
        assert needle in text
    assert "seed" not in text.lower() and '"random_state": 13' in text  # no internal nicknames in the report
    assert (tmp_path / "out" / "reliability_D1.png").stat().st_size > 10_000
    assert (tmp_path / "out" / "coverage_accuracy_D1.png").stat().st_size > 10_000
    figures = json.loads((tmp_path / "out" / "metrics.json").read_text())
    d1 = figures["results"]["embedded-logreg"]["tasks"]["D1"]
    assert 0 <= d1["ece"] <= 1 and 0 <= d1["aurc"] <= 1
    assert d1["n"] == sum(1 for e in build(config).in_split("test") if e.task == "D1")
    metrics = warehouse.query("SELECT DISTINCT candidate FROM routing_metrics ORDER BY 1")
    assert metrics["candidate"].to_list() == ["embedded-logreg", "embedded-zeroshot"]
    # failed before: the dataset column held the candidate's name (a shadowed loop variable)
    assert warehouse.query("SELECT DISTINCT dataset FROM routing_metrics")["dataset"].to_list() == ["out"]
    runs = warehouse.query("SELECT DISTINCT run_config FROM routing_predictions")
    assert json.loads(runs["run_config"][0])["seed"] == 13
    logreg = figures["results"]["embedded-logreg"]
    assert sum(c["count"] for c in logreg["error_causes"].values()) == sum(
        round(t["n"] * (1 - t["accuracy"])) for t in logreg["tasks"].values())
    assert figures["hypotheses"]["embedded-logreg"]["H3"]["verdict"] == "not evaluated"
    assert "## Departures from the protocol" in text and any("learn from the dev split" in d
                                                            for d in figures["departures"])
    abstention = logreg["abstention_d3_vs_confidence"]  # composed turns carry both D2 and D3
    assert abstention["turns"] > 0 and 0 <= abstention["explicit_d3"]["coverage"] <= 1
    native = warehouse.query("SELECT native_confidence FROM routing_predictions WHERE candidate = 'embedded-logreg'")
    assert native["native_confidence"].drop_nulls().len() == native.height


def _run(name, correct):
    import polars as pl

    from adri_pipeline.routing.benchmark import CandidateRun
    from adri_pipeline.routing.performance import Measured

    frame = pl.DataFrame({"example_id": [f"e{i}" for i in range(len(correct))], "task": ["D1"] * len(correct),
                          "correct": correct})
    return CandidateRun(name, frame, {}, {}, 0, Measured([], 0))


@pytest.mark.parametrize("mine, llm, verdict", [
    ([True] * 475 + [False] * 25, [True] * 480 + [False] * 20, "non-inferior"),  # 1 pp behind
    ([True] * 300 + [False] * 200, [True] * 475 + [False] * 25, "inferior"),  # 35 pp behind
])
def test_h1_is_a_paired_bootstrap_against_the_margin(mine, llm, verdict):
    import numpy as np

    from adri_pipeline.routing.benchmark import _non_inferiority

    result = _non_inferiority(_run("a", mine), _run("ollama:x", llm), "D1", RunConfig(), np.random.default_rng(1))
    assert result["verdict"] == verdict and result["n"] == 500
    assert result["gap_ci95_pp"][0] <= result["gap_pp"] <= result["gap_ci95_pp"][1]


def test_error_causes_follow_the_seeds_taxonomy():
    from adri_pipeline.jev.examples import CanonicalExample, Metadata, State
    from adri_pipeline.routing.benchmark import error_cause
    from adri_pipeline.routing.builders import load_canonical  # noqa: F401 (the canonical shape)

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


@pytest.mark.slow
def test_real_pt_br_intents_logreg_beats_zeroshot_on_macro_f1(tmp_path):
    shared("routing/ohf_intents")
    config = RunConfig(dataset="ha-pt-BR", runs=0)  # quality only
    run_benchmark(config, ["embedded-zeroshot", "embedded-logreg"], Warehouse(tmp_path / "w.duckdb"), tmp_path)
    results = json.loads((tmp_path / "metrics.json").read_text())["results"]
    assert results["embedded-logreg"]["tasks"]["D1"]["macro_f1"] > results["embedded-zeroshot"]["tasks"]["D1"]["macro_f1"]


def _predictions(task: str, n: int = 60, prefix: str = "t"):
    """n decisions: confident ones right, unsure ones mostly wrong (so abstaining below 0.5 helps)."""
    import polars as pl

    rows = []
    for i in range(n):
        confident = i % 3 != 0
        rows.append({"example_id": f"{prefix}:{task}:{i}", "task": task, "answer": "sim" if i % 2 else "nao",
                     "correct": confident or i % 9 == 0, "confidence": 0.9 if confident else 0.3, "threshold": 0.5})
    return pl.DataFrame(rows)


def test_h2_is_judged_on_every_task_with_a_confidence():
    """Failed before: H2 looked at D1 only, so a team file with only D2 was always 'not supported'."""
    import numpy as np

    from adri_pipeline.routing.benchmark import RunConfig, _abstention

    only_d2 = _abstention(_predictions("D2"), RunConfig(), np.random.default_rng(1))
    assert only_d2["verdict"] == "supported" and set(only_d2) >= {"D2"} and "D1" not in only_d2
    assert only_d2["D2"]["coverage"] == pytest.approx(40 / 60) and only_d2["D2"]["gain_ci95"][0] > 0


def test_the_h2_verdict_says_which_abstention_did_better():
    import numpy as np

    from adri_pipeline.routing.benchmark import RunConfig, _abstention

    comparison = {"turns": 60, "explicit_d3": {"coverage": 0.8, "accuracy_on_kept": 0.9},
                  "derived_confidence": {"coverage": 0.6, "accuracy_on_kept": 0.9}, "no_abstention_accuracy": 0.7}
    h2 = _abstention(_predictions("D2"), RunConfig(), np.random.default_rng(1), comparison)
    assert h2["D3_explicit_vs_confidence"]["better"] == "explicit (D3)"  # as accurate, keeps more
    comparison["derived_confidence"]["accuracy_on_kept"] = 0.95
    assert _abstention(_predictions("D2"), RunConfig(), np.random.default_rng(1), comparison)[
        "D3_explicit_vs_confidence"]["better"] == "derived from confidence"



def test_a_d4_decision_with_one_intent_is_reported_apart():
    """The JEV design applies D4 only to messages annotated with two or more intents."""
    import polars as pl

    from adri_pipeline.routing.benchmark import ONE_INTENT_D4, multi_intent_d4_apart

    frame = pl.DataFrame({"task": ["D4", "D4", "D4", "D1"], "gold": ["a|b", "a", "", "x|y"]})
    assert multi_intent_d4_apart(frame)["task"].to_list() == ["D4", ONE_INTENT_D4, ONE_INTENT_D4, "D1"]


def test_a_d4_sets_confidence_is_that_every_answer_in_it_is_right():
    """Failed before: the mean of the per-intent confidences, so fourteen sure "nao" made a set
    whose one unsure intent was wrong look 0.97 sure (ha-pt-BR D4: 57 % of sets wrong at p >= 0.85)."""
    from adri_pipeline.jev.examples import CanonicalExample
    from adri_pipeline.routing.benchmark import _decisions

    intents = [f"i{n}" for n in range(15)]
    example = CanonicalExample(id="x", group_id="g", task="D4", state={}, utterance="liga a luz e marca um timer",
                               question="q", question_type="noul", options={i: i for i in intents},
                               gold_label=["i0", "i1"])
    from adri_pipeline.jev.serialize import to_request

    answers = {i: {"type": "noul", "noul": 0.01} for i in intents}
    answers["i0"] = {"type": "noul", "noul": 0.99}
    answers["i1"] = {"type": "noul", "noul": 0.45}
    response = {"model": "m", "answers": answers, "usage": {"input_tokens": 1, "output_tokens": 0}}
    row = _decisions(example, to_request(example), response)
    assert row["answer"] == "i0" and not row["correct"]
    assert row["confidence"] == pytest.approx(0.99 ** 14 * 0.55) and row["confidence"] < 0.85
