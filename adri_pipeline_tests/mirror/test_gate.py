"""The runtime gate: fallbacks, shadow neutrality and latency, queue drops, hardening only."""

import json
import threading
import time

import pytest

from adri_pipeline.mirror.gate import DecisionPoint, Gate, GateConfig, GateConfigError, load_gate_config

OPTIONS = {"executar": "executar", "confirmar": "confirmar", "vetar": "vetar"}


def point(**overrides) -> DecisionPoint:
    return DecisionPoint(**{"question": "Pode executar?", "options": OPTIONS, "mode": "control",
                            "timeout_s": 0.2, "harden_order": ["executar", "confirmar", "vetar"], **overrides})


def mirror_answering(answer, probability=0.95, delay=0.0, error=None):
    def mirror(request):
        if delay:
            time.sleep(delay)
        if error:
            raise error
        probabilities = {o: (1 - probability) / 2 for o in OPTIONS} | {answer: probability}
        return {"contract": "jev-compat-v1", "answers": {"p": {
            "answer": answer, "probabilities": probabilities, "confidence": probability}}}
    return mirror


def rule(state):
    return "confirmar" if state["valor"] > 1000 else "executar"


class MemoryLog:
    def __init__(self):
        self.records, self.lock = [], threading.Lock()

    def write(self, record):
        with self.lock:
            self.records.append(record)


def gate_with(mirror, log=None, **overrides) -> Gate:
    return Gate(GateConfig(points={"p": point(**overrides)}), {"p": rule}, {"p": mirror}, log)


def test_confident_mirror_decides_in_control():
    gate = gate_with(mirror_answering("vetar", 0.95))
    decision = gate.decide("p", {"valor": 50})
    assert (decision.answer, decision.source, decision.reason) == ("vetar", "mirror", "confident")


@pytest.mark.parametrize("mirror, overrides, reason", [
    (mirror_answering("vetar", 0.60), {}, "low_confidence"),
    (mirror_answering("vetar", 0.99, delay=1.0), {}, "timeout"),
    (mirror_answering("vetar", error=RuntimeError("model crashed")), {}, "mirror_error"),
    (mirror_answering("transferir_tudo", 0.99), {}, "invalid_option"),
    (mirror_answering("vetar", 0.99), {"quota_per_minute": 0}, "quota_exhausted"),
])
def test_rule_decides_on_every_kind_of_mirror_failure(mirror, overrides, reason):
    gate = gate_with(mirror, **overrides)
    decision = gate.decide("p", {"valor": 50})
    assert (decision.answer, decision.source, decision.reason) == ("executar", "rule", reason)


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
    path.write_text("points:\n  transferir:\n    question: Pode?\n    options: {sim: sim, nao: nao}\n"
                    "    mode: control\n    safety: true\n")
    with pytest.raises(GateConfigError, match="point 'transferir': .*needs harden_order"):
        load_gate_config(path)


def test_unapproved_recommendation_cannot_switch_a_point_to_control(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text("approved: false\npoints:\n  p:\n    question: Pode?\n    options: {sim: sim, nao: nao}\n"
                    "    mode: control\n")
    with pytest.raises(GateConfigError, match="not approved"):
        load_gate_config(path)


def test_shadow_returns_exactly_what_off_returns():
    states = [{"valor": v} for v in (10, 999, 1001, 7000)]
    off = gate_with(mirror_answering("vetar"), mode="off")
    shadow = gate_with(mirror_answering("vetar"), MemoryLog(), mode="shadow")
    assert [off.decide("p", s) for s in states] == [off.decide("p", s) for s in states]
    assert [shadow.decide("p", s).answer for s in states] == [off.decide("p", s).answer for s in states]
    shadow.drain()
    assert {r["mirror_decision"] for r in shadow.log.records} == {"vetar"}


def test_shadow_adds_no_latency_even_with_a_slow_mirror():
    slow = gate_with(mirror_answering("vetar", delay=0.3), MemoryLog(), mode="shadow", timeout_s=1.0)
    off = gate_with(mirror_answering("vetar"), mode="off")
    timings = {}
    for name, gate in (("off", off), ("shadow", slow)):
        started = time.perf_counter()
        for i in range(20):
            gate.decide("p", {"valor": i})
        timings[name] = time.perf_counter() - started
    # 20 decisions against a 0.3 s mirror: waiting would take >= 6 s; shadow must return at once
    assert timings["shadow"] < 0.25
    slow.drain()
    assert len(slow.log.records) == 20 and all(r["latency_ms"] >= 290 for r in slow.log.records)


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
    assert len(gate.log.records) == 10 - gate.dropped["p"]


def test_log_records_carry_what_evaluation_needs():
    log = MemoryLog()
    gate = gate_with(mirror_answering("vetar", 0.9), log)
    gate.decide("p", {"valor": 50})
    record = log.records[0]
    assert {k: record[k] for k in ("decision_point", "rule_decision", "mirror_decision", "mode", "used", "outcome")} == {
        "decision_point": "p", "rule_decision": "executar", "mirror_decision": "vetar", "mode": "control",
        "used": "mirror", "outcome": "confident"}
    assert record["probability"] == pytest.approx(0.9) and len(record["state_hash"]) == 64
    json.dumps(record)
