import subprocess

import dagster as dg
import pytest

from adri_pipeline.config import PROJECT_ROOT
from adri_pipeline.definitions import defs


def test_definitions_load_with_every_asset_job_sensor_and_schedule():
    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {
        "corpus",
        "codebook",
        "prompt_signature",
        "classifications",
        "classification_results",
        "evidence_audits",
        "validation_agreement",
        "analyst_snapshot",
        "routing_examples",
        "routing_benchmark",
        "shadow_log",
        "mirror_sample",
        "mirror_judgements",
        "mirror_evaluation",
        "recommended_gate_configuration",
        "review_site",
        "coder_file",
        "coded_model",
        "coder_agreement",
        "findings_corrected",
    }
    assert defs.resolve_job_def("classify_documents_job").partitions_def.name == "document_shards"
    assert {s.name for s in defs.sensors} == {
        "new_documents_sensor",
        "codebook_change_sensor",
        "new_codes_sensor",
        "reclassify_after_refit_sensor",
        "results_automation_sensor",
        "shard_runs_sensor",
        "results_after_shard_runs_sensor",
    }
    assert [s.name for s in defs.schedules] == ["nightly_backfill_schedule"]


@pytest.mark.slow  # a `dagster` subprocess; the in-process load above runs with every `make test`
def test_dagster_definitions_validate_with_the_workspace():
    result = subprocess.run(
        [str(PROJECT_ROOT / ".venv" / "bin" / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
