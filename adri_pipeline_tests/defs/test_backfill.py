"""A backfill as the UI launches one, for real: `dagster-daemon` and `dagster-webserver` on loopback with
the project's workspace, the backfill launched and read through the webserver's GraphQL API (issue 55)."""

from __future__ import annotations

import os

import pytest

from adri_pipeline.config import PROJECT_ROOT
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.in_process import materialize_graph
from adri_pipeline_tests.conftest import SAMPLE
from loopback.dagster_services import dagster_services, graphql, wait_for

pytestmark = pytest.mark.slow  # two Dagster services started and a daemon that looks every 30 s: ~2 minutes

LAUNCH = """mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
STATUS = """query Status($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status assetBackfillData { assetBackfillStatuses {
      __typename ... on AssetPartitionsStatusCounts { numPartitionsTargeted numPartitionsMaterialized
                                                      numPartitionsFailed numPartitionsInProgress } } } }
    ... on PythonError { message } } }"""
FINISHED = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


def test_a_backfill_from_the_ui_over_cached_shards_ends_with_no_failed_partition(tmp_path, ollama_stub):
    """Failed before: its one run was green, but it recorded only the shards that got new answers, and the
    daemon marked every other requested shard failed (COMPLETED_FAILED; 22 of 22 on the sample)."""
    import dagster as dg

    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="ollama",
        model="qwen-test",
        ollama_hosts=ollama_stub.host,
        corpus=str(SAMPLE),
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        materialize_graph(instance, adri, jobs=("classify",))  # every shard classified, and recorded once
        shards = instance.get_dynamic_partitions("document_shards")
    asked = len(ollama_stub.chats())
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "ADRI_WAREHOUSE": adri.warehouse,
        "ADRI_CORPUS": str(SAMPLE),
        "ADRI_BACKEND": "ollama",
        "ADRI_MODEL": "qwen-test",
        "ADRI_OLLAMA_HOSTS": ollama_stub.host,
    }

    with dagster_services(PROJECT_ROOT / "workspace.yaml", env, cwd=tmp_path, logs=tmp_path / "logs") as url:
        params = {"partitionNames": shards, "assetSelection": [{"path": ["classifications"]}]}
        launched = graphql(url, LAUNCH, {"params": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched

        def finished():
            backfill = graphql(url, STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]
            assert backfill["__typename"] == "PartitionBackfill", backfill
            return backfill if backfill["status"] in FINISHED else None

        backfill = wait_for(finished, 400, "the backfill to finish", every_s=2)

    [counts] = backfill["assetBackfillData"]["assetBackfillStatuses"]
    print(f"\nbackfill {backfill['status']}: {counts}")
    assert len(ollama_stub.chats()) == asked  # every document was cached
    assert counts["numPartitionsFailed"] == 0
    assert counts["numPartitionsMaterialized"] == counts["numPartitionsTargeted"] == len(shards)
    assert backfill["status"] == "COMPLETED_SUCCESS"
