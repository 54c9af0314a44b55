"""The runtime gate: fallbacks, shadow neutrality and latency, queue drops, hardening only."""

import json
import threading
import time
from collections import Counter

import pytest
import yaml

from adri_pipeline.mirror.gate import Gate
from adri_pipeline.mirror.gate_config import DecisionPoint, GateConfig, GateConfigError, load_gate_config
from adri_pipeline_tests.mirror.evidence import approval_for, approved, evaluation_report
from loopback.gate_traffic import YES_NO, MemoryLog, browsing, payments

OPTIONS = {"executar": "executar", "confirmar": "confirmar", "vetar": "vetar"}


def point(**overrides) -> DecisionPoint:
    return DecisionPoint(
        **{
            "kind": "judgment",
            "question": "Pode executar?",
            "options": OPTIONS,
            "mode": "control",
            "timeout_s": 0.2,
            "harden_order": ["executar", "confirmar", "vetar"],
            **overrides,
        }
    )


def wire(answers: dict) -> dict:
    """A System One response, as a server sends it."""
    return {"model": "test-mirror", "answers": answers, "usage": {"input_tokens": 10, "output_tokens": 0}}


def choice(answer, probabilities) -> dict:
    return {
        "type": "choice",
        "choice": answer,
        "probabilities": probabilities,
        "confidence": max(probabilities.values()),
    }


def mirror_answering(answer, probability=0.95, delay=0.0, error=None):
    def mirror(request):
        if delay:
            time.sleep(delay)
        if error:
            raise error
        probabilities = {o: (1 - probability) / 2 for o in OPTIONS} | {answer: probability}
        return wire({"p": choice(answer, probabilities)})

    return mirror


def drifted(mirror):
    """The mirror's answers marked as `adri routing serve` marks them while its traffic has drifted."""
    return lambda request: mirror(request) | {"x_drift": {"drifted": True, "p_value": 1e-5}}


def rule(state):
    return "confirmar" if state["valor"] > 1000 else "executar"


def gate_with(mirror, log=None, **overrides) -> Gate:
    return Gate(approved({"p": point(**overrides)}), {"p": rule}, {"p": mirror}, log)


def test_confident_mirror_decides_in_control():
    gate = gate_with(mirror_answering("vetar", 0.95))
    decision = gate.decide("p", {"valor": 50})
    assert (decision.answer, decision.source, decision.reason) == ("vetar", "mirror", "confident")


@pytest.mark.parametrize(
    "mirror, overrides, reason",
    [
        (mirror_answering("vetar", 0.60), {}, "low_confidence"),
        (mirror_answering("vetar", 0.99, delay=1.0), {}, "timeout"),
        (mirror_answering("vetar", error=RuntimeError("model crashed")), {}, "mirror_error"),
        (mirror_answering("transferir_tudo", 0.99), {}, "invalid_answer"),  # an option nobody offered
        (mirror_answering("vetar", 0.99), {"quota_per_minute": 0}, "quota_exhausted"),
        (drifted(mirror_answering("vetar", 0.99)), {}, "mirror_drifted"),  # adri routing serve's x_drift
    ],
)
def test_rule_decides_on_every_kind_of_mirror_failure(mirror, overrides, reason):
    gate = gate_with(mirror, **overrides)
    decision = gate.decide("p", {"valor": 50})
    assert (decision.answer, decision.source, decision.reason) == ("executar", "rule", reason)


def mirror_with_confidence(confidence):
    def mirror(request):
        return wire({"p": {"type": "noul", "noul": confidence}})

    return mirror


@pytest.mark.parametrize("confidence", [float("nan"), float("inf"), 5.0, -0.1, "0.99", True, None, [0.99]])
def test_a_malformed_confidence_never_commands(confidence):
    """Failed before: NaN passed `probability < threshold` and strings or 5.0 were read as confident."""
    config = approved(
        {
            "p": DecisionPoint.model_validate(
                {
                    "kind": "judgment",
                    "question": "q?",
                    "question_type": "noul",
                    "options": {"sim": "s", "nao": "n"},
                    "mode": "control",
                    "overrides": [["nao", "sim"]],
                }
            )
        }
    )
    log = MemoryLog()
    gate = Gate(config, {"p": lambda state: "nao"}, {"p": mirror_with_confidence(confidence)}, log)
    decision = gate.decide("p", {"valor": 1})
    assert (decision.answer, decision.source) == ("nao", "rule")
    assert decision.reason == "invalid_answer"
    json.dumps(log.records, allow_nan=False)  # what is logged is plain JSON, no NaN


@pytest.mark.parametrize("mode", ["control", "veto"])
def test_a_point_that_commands_needs_the_designs_085(tmp_path, mode):
    """Failed before: control loaded with threshold 0.5."""
    path = tmp_path / "gate.yaml"
    path.write_text(
        f"points:\n  p: {{kind: judgment, question: 'q?', question_type: noul, options: {{sim: s, nao: n}}, "
        f"mode: {mode}, threshold: 0.5}}\n"
    )
    with pytest.raises(GateConfigError, match=r"point 'p', field 'threshold'.*0\.85"):
        load_gate_config(path)
    assert (
        DecisionPoint(
            kind="judgment", question="q?", options={"sim": "s", "nao": "n"}, mode="warn", threshold=0.6
        ).threshold
        == 0.6
    )


@pytest.mark.parametrize("approved_flag", [True, "yes", 1])
def test_a_bare_approval_flag_is_refused(approved_flag):
    """Failed before: `approved: true` (or "yes", or 1) let any point command with no evaluation behind it."""
    with pytest.raises(ValueError, match="approved: a configuration-wide flag approves nothing"):
        GateConfig.model_validate(
            {
                "approved": approved_flag,
                "points": {
                    "p": {
                        "kind": "judgment",
                        "question": "q?",
                        "question_type": "noul",
                        "options": {"sim": "s", "nao": "n"},
                        "mode": "control",
                    }
                },
            }
        )


def test_quota_lets_through_only_so_many_calls_per_minute():
    gate = gate_with(mirror_answering("vetar"), quota_per_minute=2)
    reasons = [gate.decide("p", {"valor": 50}).reason for _ in range(4)]
    assert reasons == ["confident", "confident", "quota_exhausted", "quota_exhausted"]


def test_safety_point_never_grants_what_the_rule_denied():
    gate = gate_with(mirror_answering("executar", 0.99), safety=True)
    decision = gate.decide("p", {"valor": 5000})  # the rule asks for confirmation
    assert (decision.answer, decision.reason) == ("confirmar", "would_grant")
    assert gate.decide("p", {"valor": 50}).answer == "executar"  # same strictness: allowed


def test_safety_point_in_control_without_an_order_is_refused_at_load(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text(
        "points:\n  transferir:\n    kind: judgment\n    question: Pode?\n    options: {sim: sim, nao: nao}\n"
        "    mode: control\n    safety: true\n"
    )
    with pytest.raises(GateConfigError, match="point 'transferir': .*needs harden_order"):
        load_gate_config(path)


YES_NO_POINT = (
    "points:\n  p:\n    kind: judgment\n    question: Pode?\n    question_type: noul\n"
    "    options: {sim: sim, nao: nao}\n"
    "    overrides: [[sim, nao]]\n"
)


@pytest.mark.parametrize("mode", ["control", "veto", "warn"])
def test_a_point_that_acts_needs_an_approval_bound_to_an_evaluation(tmp_path, mode):
    path = tmp_path / "gate.yaml"
    path.write_text(YES_NO_POINT + f"    mode: {mode}\n")
    with pytest.raises(GateConfigError, match=f"point p: mode {mode} needs an approval bound to an evaluation"):
        load_gate_config(path)
    evaluation_report(tmp_path / "evaluation.json", {"p": mode})
    approval = approval_for(tmp_path / "evaluation.json")
    path.write_text(
        YES_NO_POINT + f"    mode: {mode}\n    approval: {{evaluation: evaluation.json, "
        f"sha256: {approval.sha256}, date: '{approval.date}'}}\n"
    )
    assert load_gate_config(path).points["p"].mode == mode  # relative to the configuration's folder


@pytest.mark.parametrize(
    "recommended, mode, edit, refusal",
    [
        ("shadow", "control", None, "mode control but its evaluation recommended 'keep shadow'"),
        ("warn", "control", None, "mode control but its evaluation recommended"),
        ("control", "control", "tamper", "changed since the approval"),
        ("control", "control", "delete", "the evaluation it was approved on is missing"),
        ("control", "control", "other_point", "does not evaluate this point"),
        ("control", "control", "date", "approval dated 2020-01-01 but"),
    ],
)
def test_an_approval_the_evaluation_does_not_support_is_refused_naming_the_point(
    tmp_path, recommended, mode, edit, refusal
):
    report = evaluation_report(tmp_path / "evaluation.json", {"other" if edit == "other_point" else "p": recommended})
    approval = approval_for(report).model_dump(mode="json")
    if edit == "tamper":
        report.write_text(report.read_text().replace("0.85", "0.5"))
    if edit == "delete":
        report.unlink()
    if edit == "date":
        approval["date"] = "2020-01-01"
    path = tmp_path / "gate.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "points": {
                    "p": {
                        "kind": "judgment",
                        "question": "Pode?",
                        "question_type": "noul",
                        "options": {"sim": "sim", "nao": "nao"},
                        "mode": mode,
                        "overrides": [["sim", "nao"]],
                        "approval": approval,
                    }
                }
            }
        )
    )
    with pytest.raises(GateConfigError, match=f"point p: .*{refusal}"):
        load_gate_config(path)


def test_a_promoted_point_may_run_with_less_authority_not_more(tmp_path):
    report = evaluation_report(tmp_path / "evaluation.json", {"p": "control"})
    for mode in ("veto", "warn", "shadow"):
        point = DecisionPoint(
            kind="judgment",
            question="q?",
            question_type="noul",
            options={"sim": "s", "nao": "n"},
            mode=mode,
            approval=approval_for(report),
        )
        assert GateConfig(points={"p": point}).points["p"].mode == mode


def test_shadow_returns_exactly_what_off_returns():
    states = [{"valor": v} for v in (10, 999, 1001, 7000)]
    off = gate_with(mirror_answering("vetar"), mode="off")
    shadow = gate_with(mirror_answering("vetar"), MemoryLog(), mode="shadow")
    assert [shadow.decide("p", s).answer for s in states] == [rule(s) for s in states]
    assert [shadow.decide("p", s).answer for s in states] == [off.decide("p", s).answer for s in states]
    shadow.drain()
    assert {r["mirror_decision"] for r in shadow.log.records} == {"vetar"}


def test_shadow_never_waits_for_the_mirror():
    release = threading.Event()

    def blocked(request):
        release.wait(5)
        return mirror_answering("vetar")(request)

    gate = gate_with(blocked, MemoryLog(), mode="shadow", timeout_s=5.0)
    answers = [gate.decide("p", {"valor": i}).answer for i in range(5)]  # returns while the mirror is blocked
    assert answers == ["executar"] * 5 and gate.log.records == []
    release.set()
    gate.drain()
    assert len(gate.log.records) == 5


def test_full_queue_drops_the_sample_and_counts_it():
    release = threading.Event()

    def blocked(request):
        release.wait(5)
        return mirror_answering("vetar")(request)

    config = GateConfig(points={"p": point(mode="shadow", timeout_s=5)}, queue_size=2, shadow_workers=1)
    gate = Gate(config, {"p": rule}, {"p": blocked}, MemoryLog())
    answers = [gate.decide("p", {"valor": i}).answer for i in range(10)]
    assert answers == ["executar"] * 10
    assert gate.dropped["p"] >= 7  # one in the worker, two queued, the rest dropped
    release.set()
    gate.drain()
    dropped = [r for r in gate.log.records if r["outcome"] == "dropped_queue_full"]
    assert len(dropped) == gate.dropped["p"] and all(r["state"] == {} for r in dropped)  # logged, no state
    assert len(gate.log.records) == 10


def test_log_records_carry_what_evaluation_needs():
    log = MemoryLog()
    gate = gate_with(mirror_answering("vetar", 0.9), log)
    gate.decide("p", {"valor": 50})
    gate.drain()  # records are written by the log's thread, off the caller's path
    record = log.records[0]
    assert {
        k: record[k] for k in ("decision_point", "rule_decision", "mirror_decision", "mode", "used", "outcome")
    } == {
        "decision_point": "p",
        "rule_decision": "executar",
        "mirror_decision": "vetar",
        "mode": "control",
        "used": "mirror",
        "outcome": "confident",
    }
    assert record["probability"] == pytest.approx(0.9) and len(record["state_hash"]) == 64
    json.dumps(record)


# -- the mirror design's controls-----------------------------------------------------------------


def yes_no_gate(mode, mirror_says, probability=0.95, rule_says="sim", log=None):
    config = approved(
        {
            "p": DecisionPoint(
                kind="judgment",
                question="Foi um erro de formato?",
                question_type="noul",
                options=YES_NO,
                mode=mode,
                timeout_s=0.5,
                overrides=[(rule_says, "nao" if rule_says == "sim" else "sim")],
            )
        }
    )
    return Gate(config, {"p": lambda state: rule_says}, {"p": mirror_answering_options(mirror_says, probability)}, log)


def mirror_answering_options(answer, probability, name="p"):
    """A yes/no mirror: `probability` that its answer is right."""

    def mirror(request):
        return wire({name: {"type": "noul", "noul": probability if answer == "sim" else 1 - probability}})

    return mirror


def test_a_fresh_point_is_off_and_the_mirror_is_never_asked():
    asked = []
    config = GateConfig(points={"p": DecisionPoint(kind="judgment", question="Pode?", options=OPTIONS)})
    gate = Gate(config, {"p": rule}, {"p": lambda request: asked.append(request)})
    assert config.points["p"].mode == "off" and config.points["p"].approval is None
    assert gate.decide("p", {"valor": 1}).reason == "rule_only" and asked == []


def test_never_control_is_refused_in_control_or_veto_at_load(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text(
        "points:\n  profundidade:\n    kind: judgment\n    question: Quão fundo?\n"
        "    options: {rasa: rasa, funda: funda}\n    mode: control\n    never_control: true\n"
    )
    with pytest.raises(
        GateConfigError, match="point 'profundidade', field 'never_control': this point may not command"
    ):
        load_gate_config(path)
    warn = DecisionPoint(
        kind="judgment",
        question="Quão fundo?",
        options={"rasa": "rasa", "funda": "funda"},
        mode="warn",
        never_control=True,
    )
    assert "may never command" in approved({"profundidade": warn}).describe()["profundidade"]


@pytest.mark.parametrize(
    "rule_says, mirror_says, expected",
    [
        ("sim", "nao", ("nao", "mirror", "veto")),  # removes a "sim" when sure of "não"
        ("nao", "sim", ("nao", "rule", "no_veto")),  # never adds a "sim"
        ("sim", "sim", ("sim", "rule", "no_veto")),
    ],
)
def test_veto_only_removes_a_yes(rule_says, mirror_says, expected):
    decision = yes_no_gate("veto", mirror_says, rule_says=rule_says).decide("p", {})
    assert (decision.answer, decision.source, decision.reason) == expected


def test_veto_below_the_threshold_leaves_the_yes():
    assert yes_no_gate("veto", "nao", probability=0.7).decide("p", {}).answer == "sim"


def test_warn_never_changes_the_decision_and_returns_the_advisory():
    decision = yes_no_gate("warn", "nao").decide("p", {})
    assert (decision.answer, decision.source, decision.advisory) == ("sim", "rule", "nao")
    assert yes_no_gate("warn", "nao", probability=0.5).decide("p", {}).advisory is None


def test_several_questions_in_one_request_each_gated_on_its_own():
    requests = []
    points = {
        name: DecisionPoint(
            kind="judgment",
            question=f"{name}?",
            question_type="noul",
            options=YES_NO,
            mode="control",
            overrides=[("nao", "sim")],
        )
        for name in ("erro_disfarcado", "imagem_decorativa", "idioma_pt")
    }

    def mirror(request):
        requests.append(request)
        return wire(
            {  # no answer for idioma_pt
                "erro_disfarcado": {"type": "noul", "noul": 0.97},
                "imagem_decorativa": {"type": "noul", "noul": 1.7},
            }
        )  # breaks the spec

    gate = Gate(approved(points), {n: (lambda state: "nao") for n in points}, {n: mirror for n in points}, MemoryLog())
    decisions = gate.decide_many({"url": "https://exemplo.org"}, list(points))
    assert len(requests) == 1 and set(requests[0]["questions"]) == set(points)
    assert (decisions["erro_disfarcado"].answer, decisions["erro_disfarcado"].reason) == ("sim", "confident")
    assert (decisions["imagem_decorativa"].answer, decisions["imagem_decorativa"].reason) == ("nao", "invalid_answer")
    assert (decisions["idioma_pt"].answer, decisions["idioma_pt"].reason) == ("nao", "invalid_answer")
    gate.drain()
    assert len(gate.log.records) == 3


def test_score_questions_are_used_only_in_range_and_confident():
    point = DecisionPoint(
        kind="judgment", question="Quão relevante?", question_type="score", score_range=(0, 10), mode="control"
    )
    gate_for = lambda answer, confidence: Gate(  # noqa: E731
        approved({"p": point}),
        {"p": lambda state: 5.0},
        {
            "p": lambda request: wire(
                {
                    "p": {
                        "type": "score",
                        "score": answer,
                        "legend": {"0": "mínimo", "1": "máximo"},
                        "probabilities": {"0": 1 - answer, "1": answer},
                        "confidence": confidence,
                    }
                }
            )
        },
    )
    # the wire's two levels (0, 1) map onto the point's range: 0.8 -> 8
    assert (gate_for(0.8, 0.9).decide("p", {}).answer, gate_for(0.8, 0.9).decide("p", {}).source) == (8.0, "mirror")
    assert gate_for(1.2, 0.99).decide("p", {}).reason == "invalid_answer"  # probabilities outside [0, 1]
    assert gate_for(0.8, 0.6).decide("p", {}).reason == "low_confidence"


def test_a_rule_answer_outside_the_options_is_logged_and_returned_unchanged():
    log = MemoryLog()
    gate = Gate(
        approved({"p": point(safety=True)}), {"p": lambda state: "Executar"}, {"p": mirror_answering("vetar")}, log
    )
    decision = gate.decide("p", {"valor": 1})
    assert (decision.answer, decision.reason) == ("Executar", "rule_invalid_option")
    gate.drain()
    assert log.records[0]["outcome"] == "rule_invalid_option" and log.records[0]["mirror_decision"] is None


def test_a_gate_fault_never_reaches_the_caller():
    class BrokenLog:
        def write(self, record, *, redacted=False):
            raise OSError("disk full")

    gate = gate_with(mirror_answering("vetar"), BrokenLog())
    decision = gate.decide("p", {"valor": 50})  # the log is written off the caller's path: its fault stays there
    assert (decision.answer, decision.reason) == ("vetar", "confident")
    gate.drain()
    broken = gate_with(mirror_answering("vetar"))
    broken.mirrors = None  # a fault inside the gate itself
    assert broken.decide("p", {"valor": 50}).reason == "gate_error"


def test_the_mirror_and_the_log_receive_no_personal_data():
    seen = []

    def mirror(request):
        seen.append(json.dumps(request, ensure_ascii=False))
        return mirror_answering("vetar")(request)

    state = {
        "valor": 50,
        "mensagem": "sou ana@exemplo.org, ligue 0800 123 4567",
        "cpf": 12345678909,
        "telefone": 11987654321,
        "cnpj": "12.345.678/0001-95",
        "contatos": {"ana@exemplo.org": "Maria Silva"},
    }
    config = approved({"p": point()}, redact_names=["Maria Silva"])
    log = MemoryLog()
    gate = Gate(config, {"p": rule}, {"p": mirror}, log, hash_key=b"k")
    gate.decide("p", state)
    gate.drain()
    written = seen[0] + json.dumps(log.records, ensure_ascii=False)
    for secret in (
        "ana@exemplo.org",
        "0800 123 4567",
        "12345678909",
        "11987654321",
        "12.345.678/0001-95",
        "Maria Silva",
    ):
        assert secret not in written
    assert "[EMAIL]" in seen[0] and "[CPF]" in seen[0]


def test_state_hash_is_keyed_and_cannot_be_confirmed_without_the_key():
    import hashlib

    state = {"valor": 50}
    log = MemoryLog()
    Gate(approved({"p": point()}), {"p": rule}, {"p": mirror_answering("vetar")}, log, hash_key=b"secret").decide(
        "p", state
    )
    plain = hashlib.sha256(json.dumps(state, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    other_key = Gate(approved({"p": point()}), {"p": rule}, {}, hash_key=b"other")
    assert log.records[0]["state_hash"] not in (plain, other_key.state_hash("p", state))


def test_exposed_fields_reach_the_mirror_unredacted():
    seen = []
    config = approved({"p": point(expose_fields=["telefone_loja"])})
    gate = Gate(config, {"p": rule}, {"p": lambda r: seen.append(r) or mirror_answering("vetar")(r)})
    gate.decide("p", {"valor": 1, "telefone_loja": "(11) 3333-4444", "cliente": "(11) 98888-7777"})
    assert "(11) 3333-4444" in seen[0]["state"] and "98888-7777" not in seen[0]["state"]


def test_a_field_exposed_to_one_point_is_never_sent_for_another():
    """Failed before: decide_many sent one request for every point, with every point's exposed fields."""
    seen = []

    def mirror(request):
        seen.append(request)
        return wire(
            {
                name: choice("executar", {"executar": 0.95, "confirmar": 0.03, "vetar": 0.02})
                for name in request["questions"]
            }
        )

    config = approved({"p": point(expose_fields=["telefone_loja"]), "q": point()})
    gate = Gate(config, {"p": rule, "q": rule}, {"p": mirror, "q": mirror})
    gate.decide_many({"valor": 1, "telefone_loja": "(11) 3333-4444"}, ["p", "q"])
    by_point = {tuple(sorted(r["questions"])): r["state"] for r in seen}
    assert set(by_point) == {("p",), ("q",)}
    assert "(11) 3333-4444" in by_point[("p",)] and "3333-4444" not in by_point[("q",)]


def test_the_gate_needs_only_the_shared_contract_not_the_benchmark():
    """The piece that sits in a production agent imports no benchmark, pipeline or orchestrator."""
    import subprocess
    import sys

    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, adri_pipeline.mirror.gate; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ours = {m for m in loaded if m.startswith("adri_pipeline.")}
    assert ours <= {
        "adri_pipeline.config",
        "adri_pipeline.flags",
        "adri_pipeline.errors",
        "adri_pipeline.mirror",
        "adri_pipeline.mirror.gate",
        "adri_pipeline.mirror.gate_config",
        "adri_pipeline.mirror.gate_plumbing",
        "adri_pipeline.mirror.results",
        "adri_pipeline.privacy",
        "adri_pipeline.mirror.approval",
        "adri_pipeline.jev",
        "adri_pipeline.jev.contract",
        "adri_pipeline.jev.examples",
        "adri_pipeline.jev.serialize",
        "adri_pipeline.jev.drift",
        "adri_pipeline.jev.metrics",
        "adri_pipeline.strict_json",
    }, ours
    assert not {"sklearn", "dagster", "duckdb", "polars", "matplotlib"} & set(loaded)


def test_a_control_is_switched_off_from_configuration_without_restarting(tmp_path):
    """Failed before: the README said 'reload the configuration' and the gate had no way to."""
    path = tmp_path / "gate.yaml"
    on = approved({"p": point()})
    gate = Gate(on, {"p": rule}, {"p": mirror_answering("vetar", 0.95)})
    assert gate.decide("p", {"valor": 50}).source == "mirror"
    path.write_text(yaml.safe_dump({"points": {"p": {**point().model_dump(mode="json"), "mode": "off"}}}))
    gate.reload(load_gate_config(path))
    decision = gate.decide("p", {"valor": 50})
    assert (decision.answer, decision.source) == ("executar", "rule")


@pytest.mark.parametrize("harden_order, refused", [([], True), (["nao", "sim"], True), (["sim", "nao"], False)])
def test_a_veto_on_a_safety_point_must_harden(harden_order, refused):
    """Failed before: a safety point 'must it be blocked?' in veto could turn 'sim' (block) into 'nao'."""

    def build():
        return DecisionPoint(
            kind="judgment",
            question="Pode executar?",
            question_type="noul",
            options={"sim": "s", "nao": "n"},
            mode="veto",
            safety=True,
            harden_order=harden_order,
        )

    if refused:
        with pytest.raises(ValueError, match="a safety point in veto needs harden_order"):
            build()
    else:
        assert build().restrictiveness("nao") > build().restrictiveness("sim")


def test_a_system_one_server_named_in_the_configuration_is_the_mirror_and_a_broken_answer_leaves_the_rule():
    """`mirror: jev:<url>` on a point: the gate asks that server over the wire; an answer that breaks the
    spec (jevcompat's mock with noul-range: a noul above 1) is discarded and the rule decides."""
    from loopback.systemone_servers import jevcompat_mock

    outcomes = {}
    for fault in ((), ("noul-range",)):
        with jevcompat_mock(*fault) as url:
            point = DecisionPoint(
                kind="judgment",
                question="O HTML basta?",
                question_type="noul",
                options=YES_NO,
                mode="shadow",
                timeout_s=5,
                mirror=f"jev:{url}",
            )
            log = MemoryLog()
            gate = Gate(GateConfig(points={"p": point}), {"p": lambda state: "sim"}, {}, log)
            decisions = [gate.decide("p", {"pagina": n}) for n in range(5)]
            gate.drain()
            gate.close()
        assert all((d.answer, d.source) == ("sim", "rule") for d in decisions)
        outcomes[fault] = {r["outcome"] for r in log.records}
    assert outcomes[()] <= {"agree", "disagree"} and outcomes[()]
    assert outcomes[("noul-range",)] == {"invalid_answer"}


def test_a_mirror_that_is_not_a_system_one_url_is_refused_naming_the_point():
    point = DecisionPoint(
        kind="judgment", question="q?", question_type="noul", options=YES_NO, mode="shadow", mirror="jev:gpu1:8000"
    )
    with pytest.raises(GateConfigError, match="point p: mirror .*http://"):
        Gate(GateConfig(points={"p": point}), {"p": lambda state: "sim"}, {})


def test_a_reload_that_drops_a_point_leaves_its_rule_deciding_without_a_traceback(caplog):
    """Failed before: every decision on the dropped point logged "gate fault" with a traceback."""

    def answering_q(request):
        return wire({"q": choice("vetar", {"executar": 0.025, "confirmar": 0.025, "vetar": 0.95})})

    gate = Gate(
        approved({"p": point(), "q": point()}),
        {"p": rule, "q": rule},
        {"p": mirror_answering("vetar", 0.95), "q": answering_q},
    )
    gate.reload(approved({"q": point()}))
    decisions = [gate.decide_many({"valor": 50}, ["p", "q"]) for _ in range(5)]
    assert all(
        (d["p"].answer, d["p"].source, d["p"].reason) == ("executar", "rule", "not_configured") for d in decisions
    )
    assert all(d["q"].source == "mirror" for d in decisions)  # the point still configured is untouched
    assert "gate fault" not in caplog.text and caplog.text.count("is not in the gate's configuration") == 1


def test_calls_to_a_hung_mirror_never_pile_up_to_fire_when_it_recovers():
    """Failed before: every decision queued one more call behind the hung ones, and all of them reached
    the mirror once it answered again. Now at most the pool's workers are ever at the mirror; past that
    the rule decides at once (mirror_busy)."""
    release, calls, lock = threading.Event(), [0], threading.Lock()

    def hung(request):
        with lock:
            calls[0] += 1
        release.wait(10)
        return wire({"p": choice("vetar", {"executar": 0.025, "confirmar": 0.025, "vetar": 0.95})})

    gate = gate_with(hung, timeout_s=0.01)
    reasons = Counter(gate.decide("p", {"valor": 50}).reason for _ in range(60))
    release.set()
    gate.close()
    workers = gate.config.shadow_workers + 4
    assert calls[0] <= workers and reasons["mirror_busy"] >= 60 - workers
    assert set(reasons) <= {"timeout", "mirror_busy"}


def test_a_running_gate_stops_acting_when_its_evaluation_file_is_edited_or_deleted():
    """Failed before: the approval was checked at load only; a running gate kept commanding after the
    evaluation it was approved on was rewritten."""
    gate = gate_with(mirror_answering("vetar"))
    assert gate.decide("p", {"valor": 1}).source == "mirror"
    evaluation = gate.config.evaluation_path(gate.config.points["p"])
    evaluation.write_text(evaluation.read_text().replace("promote", "retire"))
    decision = gate.decide("p", {"valor": 1})
    assert (decision.source, decision.reason) == ("rule", "approval_revoked")

    other = gate_with(mirror_answering("vetar"))
    other.config.evaluation_path(other.config.points["p"]).unlink()
    assert other.decide("p", {"valor": 1}).reason == "approval_revoked"


def test_a_hung_mirror_in_shadow_never_holds_up_control():
    """Failed before: shadow and control shared one pool and one bound on calls at the mirror, so calls
    hung in shadow left control "mirror_busy" (or timing out) for as long as the mirror hung."""
    release = threading.Event()

    def hung(request):
        release.wait(10)
        return mirror_answering("vetar")(request)

    points = {"s": point(mode="shadow", timeout_s=0.05), "c": point()}

    def control_mirror(request):
        return wire({"c": choice("vetar", {"executar": 0.025, "confirmar": 0.025, "vetar": 0.95})})

    gate = Gate(
        approved(points, shadow_workers=1), {"s": rule, "c": rule}, {"s": hung, "c": control_mirror}, MemoryLog()
    )
    try:
        for i in range(20):
            gate.decide("s", {"valor": i})
        time.sleep(0.5)  # the shadow's calls time out one after another, each left hung at the mirror
        decisions = [gate.decide("c", {"valor": i}) for i in range(5)]
        assert [(d.source, d.reason) for d in decisions] == [("mirror", "confident")] * 5
    finally:
        release.set()
        gate.close()


def test_an_evaluation_whose_figures_are_not_an_evaluations_is_refused_naming_the_field(tmp_path):
    """Failed before: a threshold written as text reached a comparison and raised a TypeError."""
    import json

    from adri_pipeline_tests.mirror.evidence import EVALUATED_AT, approval_for

    report = tmp_path / "mirror_evaluation.json"
    report.write_text(
        json.dumps(
            {
                "evaluated_at": EVALUATED_AT,
                "evaluations": {"p": {"recommendation": "promote", "recommended_mode": "control", "threshold": "alto"}},
            }
        )
    )
    with pytest.raises(ValueError, match=r"point p: .*mirror_evaluation.json: its evaluation is not one .*threshold"):
        GateConfig(points={"p": point(mode="control", approval=approval_for(report))})


def test_a_gate_watches_its_mirror_for_drift_itself_and_the_rule_decides_until_traffic_returns(caplog):
    """Issue 42, item 4, with sparrow-decider on loopback as the mirror (it reports no drift of its own).
    Its confidences on shadow traffic are what its evaluation keeps; in warn mode the gate passes its
    advice on payments traffic, lets the rule decide alone once browsing traffic arrives (reason
    mirror_drifted, a log line, a counter), and passes advice again when payments return. Failed
    before: the gate trusted a mirror's confidence on any traffic unless the server said x_drift."""
    import random

    from adri_pipeline.jev.drift import WINDOW
    from adri_pipeline.mirror.evaluate import confidence_reference
    from loopback.systemone_servers import sparrow_server

    rng = random.Random(42)
    with sparrow_server() as url:
        question = dict(
            kind="judgment",
            question="O pedido pode seguir sem confirmação?",
            question_type="noul",
            options=YES_NO,
            timeout_s=5,
            mirror=f"jev:{url}",
        )
        log = MemoryLog()
        shadow = Gate(
            GateConfig(points={"p": DecisionPoint(mode="shadow", **question)}), {"p": lambda s: "sim"}, {}, log
        )
        for state in payments(rng, 200):
            shadow.decide("p", state)
        shadow.close()
        reference = confidence_reference(log.records)
        assert len(reference) == 200 and reference == sorted(reference)

        config = approved({"p": DecisionPoint(mode="warn", threshold=0.5, **question)}, confidences={"p": reference})
        gate = Gate(config, {"p": lambda s: "sim"}, {})
        with caplog.at_level("WARNING", logger="adri_pipeline.jev.drift"):
            reasons = [
                [gate.decide("p", state).reason for state in traffic(rng, 2 * WINDOW)]
                for traffic in (payments, browsing, payments)
            ]
        gate.close()
    assert "mirror_drifted" not in reasons[0] and set(reasons[0]) <= {"advisory", "low_confidence"}
    assert reasons[1][-WINDOW:] == ["mirror_drifted"] * WINDOW
    assert reasons[2][-WINDOW // 2 :].count("mirror_drifted") == 0
    counters = gate.drift_counters()["p"]
    assert (counters["alarms"], counters["recoveries"], counters["drifted"]) == (1, 1, False)
    assert counters["served"] == 6 * WINDOW and counters["abstained"] >= WINDOW
    said = [r.getMessage().split(":")[0] for r in caplog.records]
    assert said == ["mirror point p drift detected", "mirror point p drift over"]


def test_a_point_whose_evaluation_kept_no_confidences_is_not_watched(caplog):
    with caplog.at_level("INFO", logger="adri_pipeline.mirror.gate"):
        gate = gate_with(mirror_answering("vetar", 0.95))
    assert gate.drift_counters() == {} and "point p is not watched for drift" in caplog.text
    assert gate.decide("p", {"valor": 50}).reason == "confident"


FIRST_CALL = """
import json, sys, time
from adri_pipeline.mirror.gate import Gate
from adri_pipeline.mirror.gate_config import DecisionPoint
from adri_pipeline_tests.mirror.evidence import approved

timeout_s, url = float(sys.argv[1]), sys.argv[2]
point = DecisionPoint(kind="judgment", question="Pode executar?",
                      options={o: o for o in ("executar", "confirmar", "vetar")},
                      mode="control", timeout_s=timeout_s, harden_order=["executar", "confirmar", "vetar"],
                      mirror="jev:" + url)
gate = Gate(approved({"p": point}), {"p": lambda state: "executar"}, {})
from adri_pipeline import privacy
loaded = privacy._name_lists.cache_info().currsize == 1  # before the first decision, not during it
seconds = []
for n in range(3):
    started = time.perf_counter()
    decision = gate.decide("p", {"pedido": f"pagar a fatura {n} da Ana Paula"})
    seconds.append(time.perf_counter() - started)
print(json.dumps({"seconds": seconds, "reason": decision.reason, "names_loaded_with_the_gate": loaded}))
"""


def test_the_first_control_call_of_a_fresh_process_is_bounded_by_timeout_s():
    """Failed before: the first decision of a process took the point's timeout plus the 0.3-0.5 s the
    redactor spent loading its name list on that decision (about 2x timeout_s at the default 0.5 s);
    the list is loaded with the gate now. A fresh process (nothing loaded yet), a mute server on
    loopback, a generous 1 s timeout so that noise does not matter: each call under 1.5 s, and the
    name list loaded before the first decision (the check that failed before, whatever the noise)."""
    import subprocess
    import sys

    from loopback.systemone_servers import mute_server

    timeout_s = 1.0
    with mute_server() as url:
        done = subprocess.run(
            [sys.executable, "-c", FIRST_CALL, str(timeout_s), url], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout.splitlines()[-1])
    assert measured["reason"] == "timeout" and measured["names_loaded_with_the_gate"]
    assert all(s < 1.5 * timeout_s for s in measured["seconds"]), measured


@pytest.mark.parametrize(
    "question, what",
    [
        ("Quantos itens tem o carrinho?", "a count"),
        ("How many retries did the tool need?", "a count"),
        ("O valor é maior que 1000 reais?", "a comparison of numbers"),
        ("O total passa de 500 reais?", "a comparison of numbers"),
        ("O CPF informado é válido?", "a format check"),
        ("O e-mail tem formato válido?", "a format check"),
        ("O cliente está na lista de bloqueados?", "a lookup"),
        ("A ferramenta foi chamada?", "whether a tool was called or failed"),
        ("A API devolveu erro?", "whether a tool was called or failed"),
        ("O arquivo já existe?", "whether a file exists"),
        ("Que permissões tem o utilizador?", "the user's permissions"),
    ],
)
def test_a_point_whose_question_asks_a_fact_is_refused_at_load_naming_file_point_and_fact(tmp_path, question, what):
    """Failed before: nothing stopped a configured point from asking a model what code decides (the
    mirror design: "Os factos são decididos pelo código [...] O modelo só julga o significado")."""
    path = tmp_path / "gate.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "points": {
                    "carrinho": {"kind": "judgment", "question": question, "question_type": "noul", "options": YES_NO}
                }
            },
            allow_unicode=True,
        )
    )
    with pytest.raises(GateConfigError, match=f"{path}: point 'carrinho', field 'question': .* asks for {what}"):
        load_gate_config(path)


@pytest.mark.parametrize(
    "question",
    [
        "Foi um erro de formato?",
        "Que tipo de página é esta?",
        "O texto do artigo já está no HTML bruto (sem navegador)?",
        "Este dado é da empresa que procuramos?",
        "É preciso outra pesquisa?",
        "Does this count as spam?",
        "O agente deve continuar, mudar de abordagem ou parar?",
        "A resposta diz ter enviado algo que o rasto não suporta?",
    ],
)
def test_the_mirror_designs_own_judgments_load(question):
    """The questions the mirror design gives as a model's to judge are not taken for facts."""
    assert DecisionPoint(kind="judgment", question=question, question_type="noul", options=YES_NO).kind == "judgment"


def test_a_point_must_declare_its_question_a_judgment_and_a_fact_is_refused(tmp_path):
    """Failed before: `kind` did not exist; a point declared nothing about what its question asks."""
    path = tmp_path / "gate.yaml"
    point = {"question": "Pode executar?", "question_type": "noul", "options": YES_NO}
    for declared, message in (
        ({}, "field 'kind': required: say `kind: judgment`"),
        ({"kind": "fact"}, "field 'kind': fact: facts are decided by code"),
    ):
        path.write_text(yaml.safe_dump({"points": {"p": point | declared}}))
        with pytest.raises(GateConfigError, match=f"{path}: point 'p', {message}"):
            load_gate_config(path)


def test_every_shipped_gate_configuration_loads():
    from adri_pipeline.config import DATA

    shipped = sorted(DATA.rglob("*gate*.yaml"))
    assert shipped and all(all(p.kind == "judgment" for p in load_gate_config(f).points.values()) for f in shipped)
