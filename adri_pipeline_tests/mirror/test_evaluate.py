import json

import yaml

from adri_pipeline.config import PROJECT_ROOT
from adri_pipeline.mirror.evaluate import evaluate_log, evaluate_point, judge, sample_for_judging
from adri_pipeline.mirror.gate import DecisionPoint, load_gate_config
from adri_pipeline.mirror.judges import FileJudge, OllamaJudge, judge_families_differ
from adri_pipeline_tests.ollama_server import OllamaStub

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


def test_two_ollama_judges_of_different_families_through_the_loopback_server():
    def responder(request):
        return json.dumps({"resposta": "sim" if request["model"].startswith("qwen") else "nao"})

    with OllamaStub(models=("qwen2.5:7b", "gemma3:4b"), responder=responder) as stub:
        qwen, gemma = OllamaJudge("qwen2.5:7b", stub.host), OllamaJudge("gemma3:4b", stub.host)
        assert judge_families_differ(qwen, gemma)
        assert not judge_families_differ(qwen, OllamaJudge("qwen2.5:14b", stub.host))
        judged = judge(sample_for_judging([record(0, "sim", "nao")]), POINT, qwen, gemma)
        schema = stub.chats()[0]["format"]["properties"]["resposta"]
    assert schema["enum"] == ["sim", "nao"]
    assert (judged[0]["judge_a"], judged[0]["judge_b"]) == ("sim", "nao")
    assert evaluate_point("p", POINT, [record(0, "sim", "nao")], judged)["counted"] == 0


def test_sample_log_evaluation_recommends_hardening_only_control_for_approval(tmp_path, warehouse):
    config = load_gate_config(PROJECT_ROOT / "data" / "mirror" / "gate.yaml")
    report = evaluate_log(PROJECT_ROOT / "data" / "mirror" / "sample_shadow_log.jsonl", config.points,
                          FileJudge("a"), FileJudge("b"), warehouse, tmp_path)
    evaluation = report["evaluations"]["confirmar_transferencia"]
    assert evaluation["recommendation"] == "promote"
    assert evaluation["control_accuracy"] > evaluation["rule_accuracy"]
    recommended = yaml.safe_load((tmp_path / "recommended_gate.yaml").read_text())
    assert recommended["approved"] is False
    assert recommended["points"]["confirmar_transferencia"]["mode"] == "control"
    assert recommended["points"]["confirmar_transferencia"]["harden_order"] == ["executar", "confirmar", "vetar"]
