"""The shadow log's quarantine as an asset check: bad lines are named (redacted), the evaluation goes on."""

import json

from adri_pipeline.config import DATA
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.in_process import materialize_graph


def test_quarantined_lines_fail_the_check_without_stopping_the_evaluation(dagster_instance, tmp_path):
    log = tmp_path / "shadow.jsonl"
    sample = (DATA / "mirror" / "sample_shadow_log.jsonl").read_text(encoding="utf-8")
    log.write_text(sample + '{"broken": "cpf 123.456.789-09"\n' + json.dumps({"decision_point": "x"}) + "\n")
    adri = AdriSettings(warehouse=str(tmp_path / "w.duckdb"), mirror_log=str(log), backend="embedded")
    graph = materialize_graph(dagster_instance, adri, jobs=("mirror",))
    [check] = [
        e.asset_check_evaluation_data for e in graph.mirror.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert not check.passed and check.description.startswith("2 line(s) quarantined")
    assert "123.456.789-09" not in check.description
    assert graph.mirror.success  # a warning: the valid lines are still evaluated
