import json

import pytest
import yaml

from adri_pipeline.config import BUNDLED, Settings
from adri_pipeline.mirror.evaluate import (
    evaluate_point,
    judge,
    sample_for_judging,
)
from adri_pipeline.mirror.gate import DecisionPoint
from adri_pipeline.mirror.judges import FileJudge, LLMJudge, judge_families_differ
from adri_pipeline.mirror.service import evaluate_log
from adri_pipeline_tests.model_server import ModelServerStub

POINT = DecisionPoint(question="Pode?", options={"sim": "sim", "nao": "não"}, threshold=0.85)


def record(i, rule, mirror, p=0.9, truth=None):
    return {"decision_point": "p", "state_hash": f"{i:064d}", "state": {"i": i}, "rule_decision": rule,
            "mirror_decision": mirror, "probability": p, "latency_ms": 2.0, "outcome": "x", "truth": truth}


def test_all_disagreements_and_a_share_of_agreements_are_sampled():
    records = [record(i, "sim", "nao" if i < 10 else "sim") for i in range(110)]
    sampled = sample_for_judging(records, agreement_share=0.2, seed=1)
    assert sum(r["stratum"] == "disagreement" for r in sampled) == 10
    agreements = [r for r in sampled if r["stratum"] == "agreement"]
    assert 5 <= len(agreements) <= 40 and all(r["weight"] == 5.0 for r in agreements)


def test_cases_the_judges_disagree_on_are_excluded():
    records = [record(i, "sim", "nao", truth="nao") for i in range(4)]
    sampled = sample_for_judging(records)
    first, second = FileJudge("a"), FileJudge("b")
    second.label = lambda point, r: "sim" if r["state"]["i"] == 0 else r["truth"]  # disagrees once
    judged = judge(sampled, POINT, first, second)
    evaluation = evaluate_point("p", POINT, records, judged)
    assert evaluation["counted"] == 3 and evaluation["judge_agreement_rate"] == 0.75
    assert evaluation["mirror_accuracy"] == 1.0 and evaluation["rule_accuracy"] == 0.0


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_two_llm_judges_of_different_families_through_the_loopback_server(provider):
    def responder(request):
        return json.dumps({"resposta": "sim" if request["model"].startswith("qwen") else "nao"})

    with ModelServerStub(models=("qwen2.5:7b", "gemma3:4b", "qwen2.5:14b"), responder=responder) as stub:
        settings = Settings(ollama_hosts=[stub.host], openai_hosts=[stub.host + "/v1"])
        qwen, gemma = LLMJudge(f"{provider}:qwen2.5:7b", settings), LLMJudge(f"{provider}:gemma3:4b", settings)
        assert judge_families_differ(qwen, gemma)  # as each server reports them
        assert not judge_families_differ(qwen, LLMJudge(f"{provider}:qwen2.5:14b", settings))
        judged = judge(sample_for_judging([record(0, "sim", "nao")]), POINT, qwen, gemma)
        schema = stub.chats()[0]["format"]["properties"]["resposta"]
    assert schema["enum"] == ["sim", "nao"]
    assert (judged[0]["judge_a"], judged[0]["judge_b"]) == ("sim", "nao")
    assert evaluate_point("p", POINT, [record(0, "sim", "nao")], judged)["counted"] == 0


def settings_for(log, warehouse, config=BUNDLED / "data" / "mirror" / "gate.yaml") -> Settings:
    return Settings(mirror_log=log, mirror_config=config, mirror_judges="truth", warehouse=warehouse.path)


def config_file(tmp_path, points: dict):
    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump({"points": {n: p.model_dump(mode="json") for n, p in points.items()}}))
    return path


def test_sample_log_evaluation_recommends_hardening_only_control_for_approval(tmp_path, warehouse):
    log = BUNDLED / "data" / "mirror" / "sample_shadow_log.jsonl"
    one_source = evaluate_log(settings_for(log, warehouse), warehouse)["evaluations"]["confirmar_transferencia"]
    assert one_source["recommendation"] == "needs a second judge"  # failed before: the log's labels counted twice

    # two label files (say, two coders), each its own source
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    for coder in ("a", "b"):
        (tmp_path / f"{coder}.jsonl").write_text("".join(
            json.dumps({"state_hash": r["state_hash"], "label": r["truth"]}) + "\n" for r in records if r.get("truth")))
    settings = settings_for(log, warehouse).model_copy(
        update={"mirror_judges": f"{tmp_path / 'a.jsonl'},{tmp_path / 'b.jsonl'}"})
    report = evaluate_log(settings, warehouse)
    evaluation = report["evaluations"]["confirmar_transferencia"]
    assert evaluation["recommendation"] == "promote"
    assert evaluation["control_accuracy"] > evaluation["rule_accuracy"]
    recommended = yaml.safe_load(open(report["recommended_configuration"]).read())
    assert recommended["approved"] is False
    assert recommended["points"]["confirmar_transferencia"]["mode"] == "control"
    assert recommended["points"]["confirmar_transferencia"]["harden_order"] == ["executar", "confirmar", "vetar"]


def test_dropped_samples_reach_the_evaluation(tmp_path, warehouse):
    import threading

    from adri_pipeline.mirror.gate import Gate, GateConfig
    from adri_pipeline.mirror.shadow_log import ShadowLog

    release = threading.Event()

    def blocked(request):
        release.wait(5)
        return {"contract": "jev-compat-v1", "answers": {"p": {"answer": "nao", "probabilities": {"nao": 0.9},
                                                                "confidence": 0.9}}}

    log_path = tmp_path / "shadow.jsonl"
    point = POINT.model_copy(update={"mode": "shadow", "timeout_s": 5})
    gate = Gate(GateConfig(points={"p": point}, queue_size=1, shadow_workers=1), {"p": lambda s: "sim"},
                {"p": blocked}, ShadowLog(log_path))
    for i in range(6):
        gate.decide("p", {"i": i})
    release.set()
    gate.close()
    report = evaluate_log(settings_for(log_path, warehouse, config_file(tmp_path, {"p": point})), warehouse)
    evaluation = report["evaluations"]["p"]
    assert evaluation["dropped_queue_full"] == gate.dropped["p"] >= 3
    assert evaluation["logged"] == 6


def test_confident_failures_are_split_into_missing_information_and_unclear_questions():
    from adri_pipeline.mirror.evaluate import diagnose_failures

    counted = [{**record(0, "sim", "nao", p=0.95), "judge_a": "sim"},  # confident and wrong: state lacks info
               {**record(1, "sim", "nao", p=0.60), "judge_a": "sim"},  # unsure and wrong: question unclear
               {**record(2, "sim", "sim", p=0.95), "judge_a": "sim"}]  # right
    diagnosis = diagnose_failures(POINT, counted)
    assert diagnosis["state_lacks_information"]["count"] == 1 and diagnosis["question_unclear"]["count"] == 1
    assert diagnosis["state_lacks_information"]["examples"][0]["state_hash"] == f"{0:064d}"


def test_savings_compare_runs_with_controls_on_and_off(tmp_path):
    from adri_pipeline.mirror.evaluate import savings
    from adri_pipeline.mirror.gate import Gate, GateConfig
    from adri_pipeline.mirror.shadow_log import ShadowLog, read_log

    log_path = tmp_path / "runs.jsonl"
    point = DecisionPoint(question="Basta o HTML?", question_type="noul", options={"sim": "sim", "nao": "não"})
    mirror = lambda request: {"contract": "jev-compat-v1", "answers": {"html": {  # noqa: E731
        "answer": "sim", "probabilities": {"sim": 0.95}, "confidence": 0.95}}}
    for run_id, mode, seconds in (("off-1", "off", 100.0), ("on-1", "control", 77.0)):
        config = GateConfig(points={"html": point.model_copy(update={"mode": mode})}, approved=True)
        gate = Gate(config, {"html": lambda state: "nao"}, {"html": mirror}, ShadowLog(log_path), run_id=run_id)
        for task in range(2):
            gate.decide("html", {"url": f"https://exemplo.org/{task}"})
            gate.task_finished(f"{run_id}-{task}", seconds, main_model_calls=3 if mode == "off" else 2)
        gate.close()
    records, bad = read_log(log_path)
    assert not bad
    result = savings([r.model_dump(mode="json") for r in records])
    assert result["time_saved_pct"] == 23.0
    assert (result["controls_on"]["main_model_calls"], result["controls_off"]["main_model_calls"]) == (4, 6)
    assert result["points"]["html"] == {"decisions": 2, "taken_by_mirror": 2, "tool_calls_avoided": 2}


@pytest.mark.slow
def test_page_type_replay_evaluation_diagnoses_confident_failures(tmp_path, warehouse):
    from adri_pipeline.mirror.replay import replay_page_type
    from adri_pipeline_tests.mirror.test_replay import pdap_subset

    replay_page_type(tmp_path / "page.jsonl", pdap_subset(tmp_path, 600))
    report = evaluate_log(settings_for(tmp_path / "page.jsonl", warehouse, config_file(tmp_path, {})), warehouse)
    diagnosis = report["evaluations"]["page_type"]["failure_diagnosis"]
    wrong = diagnosis["state_lacks_information"]["count"] + diagnosis["question_unclear"]["count"]
    assert wrong > 0 and diagnosis["question_unclear"]["examples"]
    assert all(e["mirror_decision"] != e["judge_a"] for e in diagnosis["question_unclear"]["examples"])


@pytest.mark.slow
def test_the_cli_and_dagster_evaluate_a_log_alike(tmp_path, dagster_instance):
    """One application module: `adri mirror evaluate` and the Dagster assets store the same evaluations."""
    from adri_pipeline.cli import main
    from adri_pipeline.defs.in_process import materialize_graph
    from adri_pipeline.defs.resources import AdriSettings
    from adri_pipeline.warehouse import Warehouse, read_mirror_evaluations

    log = BUNDLED / "data" / "mirror" / "sample_shadow_log.jsonl"
    assert main(["mirror", "evaluate", "--log", str(log), "--warehouse", str(tmp_path / "cli" / "w.duckdb")]) == 0
    adri = AdriSettings(warehouse=str(tmp_path / "dagster" / "w.duckdb"), mirror_log=str(log), backend="embedded")
    materialize_graph(dagster_instance, adri, jobs=("mirror",))
    by_cli = read_mirror_evaluations(Warehouse(tmp_path / "cli" / "w.duckdb"))
    by_dagster = read_mirror_evaluations(Warehouse(tmp_path / "dagster" / "w.duckdb"))
    assert by_cli.height > 0 and by_cli.drop("log").equals(by_dagster.drop("log"))
