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


def test_a_launchpad_value_the_definitions_were_not_built_with_is_refused_both_named(tmp_path):
    """Issue 58, item 2: the definitions' backfill policy was shaped by the deployment's shards_per_run
    (defs/resources.DEPLOYED); a run given another on the launchpad ran under rules it did not choose.
    The same value, or the field left empty, runs."""
    import dagster as dg

    from adri_pipeline.config import PILOT_CODEBOOK
    from adri_pipeline.defs.classification.codebook import prompt_signature
    from adri_pipeline.defs.resources import DEPLOYED, AdriSettings

    def run(**launchpad):
        adri = AdriSettings(warehouse=str(tmp_path / "w.duckdb"), codebook=str(PILOT_CODEBOOK), **launchpad)
        return dg.materialize([prompt_signature], resources={"adri": adri}, raise_on_error=False)

    refused = run(shards_per_run=DEPLOYED.shards_per_run + 1)
    assert not refused.success
    [failure] = [e for e in refused.all_events if e.event_type_value == "RESOURCE_INIT_FAILURE"]
    said = failure.event_specific_data.error.message
    assert (
        f"shards_per_run = {DEPLOYED.shards_per_run + 1}" in said and f"deployment's {DEPLOYED.shards_per_run}" in said
    )
    assert run(shards_per_run=DEPLOYED.shards_per_run).success and run().success
