import hashlib
import json
from pathlib import Path

import pytest
import yaml

from adri_pipeline.config import DATA, Settings
from adri_pipeline.mirror.evaluate import (
    evaluate_point,
    judge,
    sample_for_judging,
)
from adri_pipeline.mirror.gate_config import DecisionPoint, GateConfigError
from adri_pipeline.mirror.judges import FileJudge, LLMJudge, judge_families_differ
from adri_pipeline.mirror.service import evaluate_log
from loopback.model_server import ModelServerStub

POINT = DecisionPoint(kind="judgment", question="Pode?", options={"sim": "sim", "nao": "não"}, threshold=0.85)


HOURLY = 0.061  # USD per hour of the machine the mirror ran on (the price table's default shape)


def record(i, rule, mirror, p=0.9, truth=None):
    return {
        "decision_point": "p",
        "state_hash": f"{i:064d}",
        "state": {"i": i},
        "rule_decision": rule,
        "mirror_decision": mirror,
        "probability": p,
        "latency_ms": 2.0,
        "outcome": "x",
        "truth": truth,
    }


def test_the_mirrors_cost_per_decision_is_its_machines_price_for_its_mean_latency():
    """Asserted by no test before: the mirror design's "custo por decisão" from the price table's
    hourly rate and the logged latencies (2 ms and 6 ms: 4 ms mean)."""
    records = [record(0, "sim", "sim") | {"latency_ms": 2.0}, record(1, "nao", "nao") | {"latency_ms": 6.0}]
    evaluation = evaluate_point("p", POINT, records, [], HOURLY)
    assert evaluation.cost_per_decision_usd == pytest.approx(HOURLY * 0.004 / 3600)
    assert evaluation.hourly_price_usd == HOURLY


def test_an_evaluation_keeps_the_mirrors_confidences_for_its_gates_drift_monitor():
    """Every probability the mirror gave on the logged traffic, sorted (records without one left out);
    past REFERENCE_SIZE, evenly spaced quantiles of them, ends included."""
    from adri_pipeline.mirror.evaluate import REFERENCE_SIZE

    records = [record(i, "sim", "sim", p=0.5 + i / 100) for i in range(5)] + [record(9, "sim", None, p=None)]
    assert evaluate_point("p", POINT, records, [], HOURLY).confidence_reference == [0.5, 0.51, 0.52, 0.53, 0.54]
    many = [record(i, "sim", "sim", p=i / (3 * REFERENCE_SIZE)) for i in range(3 * REFERENCE_SIZE + 1)]
    kept = evaluate_point("p", POINT, many, [], HOURLY).confidence_reference
    assert len(kept) == REFERENCE_SIZE and (kept[0], kept[-1]) == (0.0, 1.0) and kept == sorted(kept)


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
    evaluation = evaluate_point("p", POINT, records, judged, HOURLY)
    assert evaluation.counted == 3 and evaluation.judge_agreement_rate == 0.75
    assert evaluation.mirror_accuracy == 1.0 and evaluation.rule_accuracy == 0.0


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
    assert evaluate_point("p", POINT, [record(0, "sim", "nao")], judged, HOURLY).counted == 0


def settings_for(log, warehouse, config=DATA / "mirror" / "gate.yaml") -> Settings:
    return Settings(mirror_log=log, mirror_config=config, mirror_judges="truth", warehouse=warehouse.path)


def config_file(tmp_path, points: dict):
    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump({"points": {n: p.model_dump(mode="json") for n, p in points.items()}}))
    return path


def _two_label_files(tmp_path, log, warehouse, records):
    """The evaluation with two label files as its judges: copies of the log's labels, so the same source
    twice, and a file has no model family either way."""
    for coder in ("a", "b"):
        (tmp_path / f"{coder}.jsonl").write_text(
            "".join(
                json.dumps({"state_hash": r["state_hash"], "label": r["truth"]}) + "\n"
                for r in records
                if r.get("truth")
            )
        )
    files = settings_for(log, warehouse).model_copy(
        update={"mirror_judges": f"{tmp_path / 'a.jsonl'},{tmp_path / 'b.jsonl'}"}
    )
    return evaluate_log(files, warehouse)


def _two_model_judges(log, warehouse, records):
    """The evaluation with two model judges of different families on the loopback server, each reading
    the case on its own and answering the log's label for it."""
    from adri_pipeline.jev.serialize import serialize_facts

    truth_of = {serialize_facts(r["state"]): r["truth"] for r in records if r.get("truth")}

    def judge_answers(request):
        text = request["messages"][-1]["content"]
        return json.dumps({"resposta": next(t for facts, t in truth_of.items() if text.startswith(facts))})

    with ModelServerStub(models=("qwen2.5:7b", "gemma3:4b"), responder=judge_answers) as judges:
        settings = settings_for(log, warehouse).model_copy(
            update={"mirror_judges": "ollama:qwen2.5:7b,ollama:gemma3:4b", "ollama_hosts": [judges.host]}
        )
        return evaluate_log(settings, warehouse)


def _approve_by_hand(tmp_path, report) -> tuple[Path, Path]:
    """A person approves the point on the evaluation, in the team's own configuration, whose comments
    must outlive the rewrite: the configuration file and the evaluation approved."""
    from adri_pipeline.cli import main

    gate_file = tmp_path / "gate.yaml"
    kept_by_hand = "# hand-kept: the payments team reviews every change to this file\n"
    gate_file.write_text(kept_by_hand + Path(report.recommended_configuration).read_text())
    evaluation_file = Path(report.recommended_configuration).parent / "mirror_evaluation.json"
    assert (
        main(
            [
                "mirror",
                "approve",
                "confirmar_transferencia",
                "--evaluation",
                str(evaluation_file),
                "--config",
                str(gate_file),
            ]
        )
        == 0
    )
    assert gate_file.read_text().startswith(kept_by_hand)  # failed before: the rewrite dropped every comment
    return gate_file, evaluation_file


def _assert_an_override_the_evaluation_did_not_recommend_is_refused(tmp_path, gate_file, evaluation) -> None:
    """An approved configuration widened by hand past what the evaluation showed does not load."""
    from adri_pipeline.mirror.gate_config import load_gate_config

    widened = yaml.safe_load(gate_file.read_text())
    widened["points"]["confirmar_transferencia"]["overrides"].append(["executar", "vetar"])
    if ["executar", "vetar"] not in evaluation.recommended_overrides:
        (tmp_path / "widened.yaml").write_text(yaml.safe_dump(widened))
        with pytest.raises(GateConfigError, match="overrides .* were not recommended by its evaluation"):
            load_gate_config(tmp_path / "widened.yaml")


def test_sample_log_evaluation_recommends_hardening_only_control_for_approval(tmp_path, warehouse):
    from adri_pipeline.mirror.gate_config import load_gate_config

    log = DATA / "mirror" / "sample_shadow_log.jsonl"
    one_source = evaluate_log(settings_for(log, warehouse), warehouse).evaluations["confirmar_transferencia"]
    assert one_source.recommendation == "needs a second judge"  # failed before: the log's labels counted twice

    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    two_files_report = _two_label_files(tmp_path, log, warehouse, records)
    two_files = two_files_report.evaluations["confirmar_transferencia"]
    assert two_files.recommendation == "needs a second judge"  # failed before: "promote"
    assert [j["source"] for j in two_files_report.judges] == ["label file", "label file"]
    assert two_files_report.judges[0]["annotator"] is None  # the files name no annotator

    report = _two_model_judges(log, warehouse, records)
    evaluation = report.evaluations["confirmar_transferencia"]
    assert {j["family"] for j in report.judges} == {"qwen", "gemma"}  # each judge's source, named
    # the cost per decision from the price table's shape, not a fixed rate
    assert evaluation.machine_shape == "VM.Standard.E4.Flex 1 OCPU 24 GB" and evaluation.hourly_price_usd == 0.061
    assert evaluation.recommendation == "promote"
    assert evaluation.control_accuracy > evaluation.rule_accuracy
    assert evaluation.recommended_mode == "control" and evaluation.shadow_days == 3
    recommended = yaml.safe_load(open(report.recommended_configuration).read())
    assert recommended["points"]["confirmar_transferencia"]["mode"] == "shadow"  # nothing acts before approval
    assert recommended["evidence"]["confirmar_transferencia"]["recommended_mode"] == "control"

    # approved by a person on that evaluation, the point now loads in control
    gate_file, evaluation_file = _approve_by_hand(tmp_path, report)
    approved = load_gate_config(gate_file).points["confirmar_transferencia"]
    assert approved.mode == "control" and approved.harden_order == ["executar", "confirmar", "vetar"]
    assert approved.approval.sha256 == hashlib.sha256(evaluation_file.read_bytes()).hexdigest()
    # one direction: the moves the evaluation showed the mirror wins, each hardening (a safety point)
    assert [list(m) for m in approved.overrides] == evaluation.recommended_overrides != []
    assert all(approved.restrictiveness(to) > approved.restrictiveness(of) for of, to in approved.overrides)
    _assert_an_override_the_evaluation_did_not_recommend_is_refused(tmp_path, gate_file, evaluation)

    # the one-source evaluation, rewritten over it, no longer supports control: refused naming the point
    evaluate_log(settings_for(log, warehouse), warehouse)
    with pytest.raises(GateConfigError, match="point confirmar_transferencia: .*changed since the approval"):
        load_gate_config(gate_file)


def test_approving_a_point_its_evaluation_kept_in_shadow_is_refused_and_changes_nothing(tmp_path, warehouse):
    from adri_pipeline.mirror.service import approve

    log = DATA / "mirror" / "sample_shadow_log.jsonl"
    report = evaluate_log(settings_for(log, warehouse), warehouse)  # one label source: not promoted
    gate_file = Path(report.recommended_configuration)
    before = gate_file.read_text()
    with pytest.raises(
        GateConfigError,
        match="point confirmar_transferencia: mode control but its evaluation recommended 'needs a second judge'",
    ):
        approve(gate_file, "confirmar_transferencia", gate_file.parent / "mirror_evaluation.json", "control")
    assert gate_file.read_text() == before
    # failed before: with no mode asked it wrote mode shadow and an approval, and the CLI said "approved"
    from adri_pipeline.mirror.approval import ApprovalError

    with pytest.raises(
        ApprovalError,
        match="point confirmar_transferencia: nothing approved, .* unchanged: its "
        "evaluation recommends 'needs a second judge'",
    ):
        approve(gate_file, "confirmar_transferencia", gate_file.parent / "mirror_evaluation.json")
    assert gate_file.read_text() == before


@pytest.mark.parametrize(
    "days, agreed, reason",
    [(1, 200, "1 day(s) of shadow traffic (need 2)"), (3, 40, "40 cases both judges labelled alike (need 50)")],
)
def test_promotion_waits_for_days_of_shadow_traffic_and_enough_agreed_cases(days, agreed, reason):
    """Failed before: a clear gain on one afternoon's traffic was recommended for promotion."""
    records = [
        {**record(i, "sim", "nao", p=0.95, truth="nao"), "timestamp": f"2026-11-{20 + i % days:02d}T10:00:00+00:00"}
        for i in range(agreed)
    ]
    judged = [{**r, "weight": 1.0, "stratum": "disagreement", "judge_a": "nao", "judge_b": "nao"} for r in records]
    evaluation = evaluate_point("p", POINT, records, judged, HOURLY)
    assert evaluation.recommendation == "keep shadow" and evaluation.recommended_mode == "shadow"
    assert any(reason in r for r in evaluation.reasons)
    enough = evaluate_point("p", POINT, records, judged, HOURLY, min_days=days, min_agreed=agreed)
    assert enough.recommendation == "promote" and enough.first_day == "2026-11-20"


def test_dropped_samples_reach_the_evaluation(tmp_path, warehouse):
    import threading

    from adri_pipeline.mirror.gate import Gate
    from adri_pipeline.mirror.gate_config import GateConfig
    from adri_pipeline.mirror.shadow_log import ShadowLog

    release = threading.Event()

    def blocked(request):
        release.wait(5)
        return {
            "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 0},
            "answers": {"p": {"type": "noul", "noul": 0.1}},
        }

    log_path = tmp_path / "shadow.jsonl"
    point = POINT.model_copy(update={"mode": "shadow", "timeout_s": 5})
    gate = Gate(
        GateConfig(points={"p": point}, queue_size=1, shadow_workers=1),
        {"p": lambda s: "sim"},
        {"p": blocked},
        ShadowLog(log_path),
    )
    for i in range(6):
        gate.decide("p", {"i": i})
    release.set()
    gate.close()
    report = evaluate_log(settings_for(log_path, warehouse, config_file(tmp_path, {"p": point})), warehouse)
    evaluation = report.evaluations["p"]
    assert evaluation.dropped_queue_full == gate.dropped["p"] >= 3
    assert evaluation.logged == 6


def test_confident_failures_are_split_into_missing_information_and_unclear_questions():
    from adri_pipeline.mirror.evaluate import diagnose_failures

    counted = [
        {**record(0, "sim", "nao", p=0.95), "judge_a": "sim"},  # confident and wrong: state lacks info
        {**record(1, "sim", "nao", p=0.60), "judge_a": "sim"},  # unsure and wrong: question unclear
        {**record(2, "sim", "sim", p=0.95), "judge_a": "sim"},
    ]  # right
    diagnosis = diagnose_failures(POINT, counted)
    assert diagnosis["state_lacks_information"]["count"] == 1 and diagnosis["question_unclear"]["count"] == 1
    assert diagnosis["state_lacks_information"]["examples"][0]["state_hash"] == f"{0:064d}"


# "no": a browser is opened; in control the mirror may only spare one (the mirror design's example)
HTML_POINT = DecisionPoint(
    kind="judgment",
    question="Basta o HTML?",
    question_type="noul",
    options={"sim": "sim", "nao": "não"},
    tool_call_options=["nao"],
    overrides=[("nao", "sim")],
)


def run_tasks(log_path, repetitions=3, task_seconds=None):
    """The same tasks, each run `repetitions` times with the controls on and off, through the gate."""
    from adri_pipeline.mirror.gate import Gate
    from adri_pipeline.mirror.shadow_log import ShadowLog
    from adri_pipeline_tests.mirror.evidence import approved

    def mirror(request):
        return {
            "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 0},
            "answers": {"html": {"type": "noul", "noul": 0.05 if "simples" in request["state"] else 0.95}},
        }

    def rule(state):
        return "sim" if state["url"].endswith("simples") else "nao"

    task_seconds = task_seconds or {"a": (100.0, 70.0), "b": (50.0, 40.0), "simples": (5.0, 9.0)}
    for repetition in range(repetitions):
        for mode in ("off", "control"):
            run_id = f"{mode}-{repetition}"
            gate = Gate(
                approved({"html": HTML_POINT.model_copy(update={"mode": mode})}),
                {"html": rule},
                {"html": mirror},
                ShadowLog(log_path),
                run_id=run_id,
            )
            for task, (off, on) in task_seconds.items():
                gate.decide("html", {"url": f"https://exemplo.org/{task}"})
                gate.task_finished(
                    task,
                    (on if mode == "control" else off) + repetition,
                    main_model_calls=2 if mode == "control" else 3,
                    output=f"answer to {task} (ana@exemplo.org)",
                )
            gate.close()


def log_rows(log_path):
    from adri_pipeline.mirror.shadow_log import read_log

    records, bad = read_log(log_path)
    assert not bad
    return [r.model_dump(mode="json") for r in records]


def test_savings_pair_the_same_tasks_run_with_controls_on_and_off(tmp_path):
    """Failed before: runs were compared as totals, unpaired, and any changed answer counted as a tool call avoided."""
    from adri_pipeline.mirror.savings import savings

    run_tasks(tmp_path / "runs.jsonl")
    result = savings(log_rows(tmp_path / "runs.jsonl"), {"html": HTML_POINT})
    assert result["controls_on"]["repetitions_per_task"] == [3, 3] and result["paired_seconds"]["tasks"] == 3
    per_task = result["paired_seconds"]["per_task"]
    assert per_task["a"]["difference"] == -30.0 and per_task["simples"]["difference"] == 4.0
    assert result["slower_with_controls"] == ["simples"]  # "os controlos acrescentaram entre 2 e 13 segundos"
    assert result["time_saved_pct"] == round(100 * (1 - (71 + 41 + 10) / (101 + 51 + 6)), 1)
    low, high = result["paired_seconds"]["ci95"]
    assert low <= result["paired_seconds"]["mean_difference"] <= high
    # the mirror spared a browser on a and b, and opened one on "simples" where the rule would not
    # one direction only: the mirror spares the browser on a and b; on "simples" it would have opened one
    # (rule "sim", mirror "nao"), which control no longer lets it do (two-way before: 3 added)
    assert result["points"]["html"] == {
        "decisions": 9,
        "taken_by_mirror": 6,
        "answers_changed": 6,
        "tool_calls_avoided": 6,
        "tool_calls_added": 0,
    }
    assert result["paired_main_model_calls"]["mean_difference"] == -1.0


def test_savings_warn_about_unpaired_tasks_and_too_few_repetitions(tmp_path):
    from adri_pipeline.mirror.savings import savings

    run_tasks(tmp_path / "runs.jsonl", repetitions=1)
    rows = [
        r for r in log_rows(tmp_path / "runs.jsonl") if not (r.get("task_id") == "b" and r["outcome"] == "controls_off")
    ]
    result = savings(rows, {"html": HTML_POINT})
    assert result["unpaired_tasks"] == ["b"] and result["paired_seconds"]["tasks"] == 2
    assert any("ran 1 time(s)" in w for w in result["warnings"])


def test_quality_is_graded_blind_and_paired_by_task(tmp_path):
    import csv

    from adri_pipeline.mirror.savings import SavingsError, blind_sheet, read_quality, savings

    run_tasks(tmp_path / "runs.jsonl", repetitions=2)
    rows = log_rows(tmp_path / "runs.jsonl")
    sheet = tmp_path / "grade.csv"
    key = blind_sheet(rows, sheet)
    text = sheet.read_text()
    assert "control" not in text and "off-" not in text and "ana@exemplo.org" not in text  # blind and redacted
    graded = list(csv.DictReader(sheet.open()))
    assert len(graded) == 12
    secret = json.loads(key.read_text())
    for row in graded:  # the grader: the controls' outputs are as good, except on task b
        on = secret[row["sheet_id"]]["outcome"] == "controls_on"
        row["quality"] = "3" if on and row["task_id"] == "b" else "4"
    with sheet.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["sheet_id", "task_id", "output", "quality"])
        writer.writeheader()
        writer.writerows(graded)
    quality = savings(rows, {"html": HTML_POINT}, read_quality(sheet))["quality"]
    assert quality["paired"]["tasks"] == 3 and quality["paired"]["mean_difference"] == round(-1 / 3, 3)

    sheet.write_text(sheet.read_text().replace(",4\n", ",good\n", 1))
    with pytest.raises(SavingsError, match=r"grade\.csv:\d+: quality 'good' is not a number"):
        read_quality(sheet)
    # failed before: float() read "inf" and "nan" as grades
    for odd in ("inf", "nan"):
        sheet.write_text(sheet.read_text().replace(",good\n", f",{odd}\n").replace(",inf\n", f",{odd}\n"))
        with pytest.raises(SavingsError, match=rf"grade\.csv:\d+: quality '{odd}' is not a finite number"):
            read_quality(sheet)


@pytest.mark.slow
def test_page_type_replay_evaluation_diagnoses_confident_failures(tmp_path, warehouse):
    from adri_pipeline.mirror.replay import replay_page_type
    from adri_pipeline_tests.mirror.helpers import pdap_subset

    replay_page_type(tmp_path / "page.jsonl", pdap_subset(tmp_path, 600))
    report = evaluate_log(settings_for(tmp_path / "page.jsonl", warehouse, config_file(tmp_path, {})), warehouse)
    diagnosis = report.evaluations["page_type"].failure_diagnosis
    wrong = diagnosis["state_lacks_information"]["count"] + diagnosis["question_unclear"]["count"]
    assert wrong > 0 and diagnosis["question_unclear"]["examples"]
    assert all(e["mirror_decision"] != e["judge_a"] for e in diagnosis["question_unclear"]["examples"])


@pytest.mark.slow
def test_the_cli_and_dagster_evaluate_a_log_alike(tmp_path, dagster_instance):
    """One application module: `adri mirror evaluate` and the Dagster assets store the same evaluations."""
    from adri_pipeline.cli import main
    from adri_pipeline.defs.resources import AdriSettings
    from adri_pipeline.in_process import materialize_graph
    from adri_pipeline.warehouse import Warehouse, read_mirror_evaluations

    log = DATA / "mirror" / "sample_shadow_log.jsonl"
    assert main(["mirror", "evaluate", "--log", str(log), "--warehouse", str(tmp_path / "cli" / "w.duckdb")]) == 0
    adri = AdriSettings(warehouse=str(tmp_path / "dagster" / "w.duckdb"), mirror_log=str(log), backend="embedded")
    materialize_graph(dagster_instance, adri, jobs=("mirror",))
    by_cli = read_mirror_evaluations(Warehouse(tmp_path / "cli" / "w.duckdb"))
    by_dagster = read_mirror_evaluations(Warehouse(tmp_path / "dagster" / "w.duckdb"))
    assert by_cli.height > 0 and by_cli.drop("log").equals(by_dagster.drop("log"))


def test_control_moves_one_way_only_the_direction_the_evaluation_showed_the_mirror_wins():
    """ "Controlo numa única direção" (the mirror design). Before, a promoted ordinary point overrode the
    rule either way."""
    from adri_pipeline.mirror.evaluate import override_directions

    html = HTML_POINT.model_copy(update={"overrides": []})
    # 12 pages where the rule asked for a browser and the mirror (right on 11) said the HTML was enough;
    # 6 where the rule said HTML and the mirror (right on 2) asked for a browser
    spare = [{**record(i, "nao", "sim", p=0.95, truth="sim" if i else "nao")} for i in range(12)]
    add = [{**record(100 + i, "sim", "nao", p=0.95, truth="nao" if i < 2 else "sim")} for i in range(6)]
    judged = [{**r, "judge_a": r["truth"], "judge_b": r["truth"]} for r in spare + add]
    moves = {(m["rule"], m["mirror"]): m for m in override_directions(html, judged)}
    assert moves[("nao", "sim")]["clear"] and moves[("nao", "sim")]["mirror_right"] == 11
    assert not moves[("sim", "nao")]["clear"]

    with pytest.raises(ValueError, match="control moves one way only"):
        DecisionPoint(
            kind="judgment",
            question="Basta o HTML?",
            question_type="noul",
            options={"sim": "s", "nao": "n"},
            mode="control",
        )
    from adri_pipeline.mirror.gate import Gate
    from adri_pipeline_tests.mirror.evidence import approved

    def mirror_says(answer):
        return lambda request: {
            "model": "m",
            "usage": {"input_tokens": 1, "output_tokens": 0},
            "answers": {"html": {"type": "noul", "noul": 0.95 if answer == "sim" else 0.05}},
        }

    control = HTML_POINT.model_copy(update={"mode": "control"})
    spared = Gate(approved({"html": control}), {"html": lambda s: "nao"}, {"html": mirror_says("sim")})
    assert spared.decide("html", {}).answer == "sim"  # a browser spared
    added = Gate(approved({"html": control}), {"html": lambda s: "sim"}, {"html": mirror_says("nao")})
    decision = added.decide("html", {})
    assert (decision.answer, decision.source, decision.reason) == ("sim", "rule", "other_direction")


def test_a_rule_decision_outside_the_points_options_is_quarantined_and_the_report_is_strict_json(tmp_path, warehouse):
    """Failed before: `ValueError: '...' is not in list` from the gate's harden order, a traceback
    instead of a quarantined line; and mirror_evaluation.json held bare NaN, which strict parsers refuse."""
    lines = (DATA / "mirror" / "sample_shadow_log.jsonl").read_text(encoding="utf-8").splitlines()
    odd = json.loads(lines[0]) | {"rule_decision": "talvez"}
    log = tmp_path / "shadow.jsonl"
    log.write_text("\n".join(lines + [json.dumps(odd)]) + "\n", encoding="utf-8")
    report = evaluate_log(settings_for(log, warehouse), warehouse)
    [bad] = report.quarantined
    assert bad["line"] == len(lines) + 1 and "field 'rule_decision': 'talvez' is not one of point" in bad["error"]
    assert report.kept == len(lines)
    text = (Path(report.recommended_configuration).parent / "mirror_evaluation.json").read_text(encoding="utf-8")
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in mirror_evaluation.json"))


def test_evaluate_prints_each_points_verdict_in_a_few_lines_and_the_whole_report_with_json(tmp_path, capsys):
    """Failed before: 215 lines of JSON with the verdict buried in them."""
    from adri_pipeline.cli import main

    log = DATA / "mirror" / "sample_shadow_log.jsonl"
    assert main(["mirror", "evaluate", "--log", str(log), "--warehouse", str(tmp_path / "w.duckdb")]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) < 20
    assert "confirmar_transferencia: needs a second judge (recommended mode: shadow)" in out
    assert "mirror_evaluation.json (or --json)" in out
    assert main(["mirror", "evaluate", "--log", str(log), "--warehouse", str(tmp_path / "w.duckdb"), "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["evaluations"]["confirmar_transferencia"]["recommendation"] == "needs a second judge"


def confident_disagreements(path: Path, n: int) -> Path:
    """A log of the sample's first decisions where the mirror disagrees with the rule, every one judged
    (disagreements are all sampled): `n` of them confident, and one unsure beside them."""
    lines = [
        json.loads(line)
        for line in (DATA / "mirror" / "sample_shadow_log.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    disagreeing = [r for r in lines if r["mirror_decision"] != r["rule_decision"] and r["truth"]]
    kept = [r | {"probability": 0.99} for r in disagreeing[:n]] + [disagreeing[n] | {"probability": 0.5}]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return path


def strict(text: str):
    from adri_pipeline import strict_json

    return strict_json.loads(text)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_evaluate_on_fewer_than_two_confident_cases_says_there_is_not_enough_data(tmp_path, capsys, n):
    """Failed before: at n = 1 scipy's "two or more observations" traceback; at n = 0 `--json` printed
    NaN, which strict parsers refuse."""
    from adri_pipeline.cli import main

    log = confident_disagreements(tmp_path / "shadow.jsonl", n)
    argv = ["mirror", "evaluate", "--log", str(log), "--warehouse", str(tmp_path / "w.duckdb")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    whole = strict(capsys.readouterr().out)
    gain = whole["evaluations"]["confirmar_transferencia"]["gain_ci95"]
    written = strict((tmp_path / "mirror" / "shadow" / "mirror_evaluation.json").read_text(encoding="utf-8"))
    assert written["evaluations"]["confirmar_transferencia"]["gain_ci95"] == gain
    if n < 2:
        assert gain == {"n": n, "reason": f"not enough data (n = {n})"}
        assert f"gain over the rule when confident, 95 % CI: not enough data (n = {n})" in out
    else:
        assert len(gain) == 2 and gain[0] <= gain[1]
    yaml.safe_load((tmp_path / "mirror" / "shadow" / "recommended_gate.yaml").read_text(encoding="utf-8"))


def savings_log(tmp_path, paired: int) -> Path:
    """Tasks run with the controls on and off through the gate, `paired` of them both ways (a task
    run with the controls off only pairs with nothing)."""
    from adri_pipeline.mirror.gate_plumbing import TASK_RECORD

    log = tmp_path / "runs.jsonl"
    run_tasks(
        log,
        repetitions=1,
        task_seconds={
            t: s for t, s in [("a", (100.0, 70.0)), ("b", (50.0, 40.0)), ("c", (20.0, 30.0))][: max(paired, 1)]
        },
    )
    if not paired:  # the one task's runs with the controls on left out
        rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        rows = [r for r in rows if not (r["decision_point"] == TASK_RECORD and r["outcome"] == "controls_on")]
        log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return log


@pytest.mark.parametrize("paired", [0, 1, 2])
def test_savings_on_fewer_than_two_paired_tasks_say_there_is_not_enough_data(tmp_path, capsys, paired):
    """Failed before: `adri mirror savings` ended in scipy's traceback with one paired task."""
    from adri_pipeline.cli import main

    assert main(["mirror", "savings", "--log", str(savings_log(tmp_path, paired))]) == 0
    result = strict(capsys.readouterr().out)
    for figure in ("paired_seconds", "paired_main_model_calls"):
        assert result[figure]["tasks"] == paired
        if paired < 2:
            assert result[figure]["ci95"] == {"n": paired, "reason": f"not enough data (n = {paired})"}
        else:
            low, high = result[figure]["ci95"]
            assert low <= result[figure]["mean_difference"] <= high


def test_the_dagster_evaluation_says_there_is_not_enough_data_on_one_confident_case(tmp_path, dagster_instance):
    """Failed before: the asset ended in scipy's traceback, as the CLI did, on one confident case."""
    import dagster as dg

    from adri_pipeline.defs.resources import AdriSettings
    from adri_pipeline.in_process import materialize_graph

    log = confident_disagreements(tmp_path / "shadow.jsonl", 1)
    adri = AdriSettings(warehouse=str(tmp_path / "w.duckdb"), mirror_log=str(log), backend="embedded")
    materialize_graph(dagster_instance, adri, jobs=("mirror",))
    event = dagster_instance.get_latest_materialization_event(dg.AssetKey("mirror_evaluation"))
    assert event.asset_materialization.metadata["gain_ci95"].value == {
        "confirmar_transferencia": {"n": 1, "reason": "not enough data (n = 1)"}
    }
