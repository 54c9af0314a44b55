"""One machine on a PostgreSQL instance: deploy/dagster.yaml as the instance configuration, a range
run stopped midway and resumed, the warehouse's writers held to one by the `duckdb_writer` pool."""

from __future__ import annotations

import shutil

import pytest

from adri_pipeline.config import PROJECT_ROOT
from adri_pipeline_tests.conftest import SAMPLE

pytestmark = pytest.mark.slow


@pytest.fixture
def dagster_on_postgres(postgres_server, tmp_path, monkeypatch) -> None:
    """DAGSTER_HOME with deploy/dagster.yaml, its storage on the test's PostgreSQL: the instance the
    deployment runs, not the sqlite one the other tests use."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    for key, value in {
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_USERNAME": "postgres",
        "DAGSTER_PG_PASSWORD": "",
        "DAGSTER_PG_HOST": "127.0.0.1",
        "DAGSTER_PG_DB": postgres_server.new_database("dagster"),
        "DAGSTER_PG_PORT": str(postgres_server.port),
    }.items():
        monkeypatch.setenv(key, value)


def _assert_the_warehouse_has_one_writer_at_a_time(instance) -> None:
    """Every asset that writes the DuckDB warehouse is in the `duckdb_writer` pool, which admits one run."""
    from adri_pipeline.definitions import defs

    pools = instance.get_concurrency_config().pool_config
    assert pools.default_pool_limit == 1 and pools.pool_granularity.value == "run"
    writers = {
        key.to_user_string()
        for assets in defs.resolve_asset_graph().assets_defs
        if assets.is_executable and assets.op.pool == "duckdb_writer"
        for key in assets.keys
    }
    assert {
        "corpus",
        "prompt_signature",
        "classifications",
        "classification_results",
        "analyst_snapshot",
        "routing_benchmark",
        "shadow_log",
    } <= writers


@pytest.mark.usefixtures("dagster_on_postgres")
def test_a_range_run_on_postgres_stops_midway_resumes_and_holds_the_warehouse_to_one_writer(tmp_path, ollama_stub):
    import dagster as dg

    from adri_pipeline.defs.resources import AdriSettings
    from adri_pipeline.in_process import materialize_graph

    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="ollama",
        model="qwen-test",
        ollama_hosts=ollama_stub.host,
        corpus=str(SAMPLE),
    )
    with dg.DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        _assert_the_warehouse_has_one_writer_at_a_time(instance)

        ollama_stub.fail_after = 9  # the model disappears after 9 answers: the range run stops
        first = materialize_graph(instance, adri, raise_on_error=False, jobs=("classify",))
        assert not first.classify.success
        key = dg.AssetKey("classifications")
        assert 0 < len(instance.get_materialized_partitions(key)) <= 9  # the shards of the 9 answered

        ollama_stub.fail_after = None
        second = materialize_graph(instance, adri, jobs=("classify", "results"))
        shards = instance.get_dynamic_partitions("document_shards")
        assert second.success and instance.get_materialized_partitions(key) == set(shards) and len(shards) <= 23
