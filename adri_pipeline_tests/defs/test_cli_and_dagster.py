"""One application module per flow: the CLI and the Dagster assets give the same result on the same
input. Slow (a whole graph run plus the CLI runs): `make test-slow` and .ci/run run it."""

import pytest

from adri_pipeline.cli import main
from adri_pipeline.in_process import materialize_graph
from adri_pipeline.warehouse import Warehouse
from adri_pipeline_tests.conftest import SAMPLE, adri_with

pytestmark = pytest.mark.slow


def test_classification_and_routing_by_the_cli_equal_the_assets(dagster_instance, adri):
    """Both sides measure the sample alone, with no performance run: what they must agree on is the
    deterministic metrics; the out-of-source sets and the latency runs took this test to 1,112 s of CI's
    slow suite (issue 58) and are tested on their own."""
    adri = adri_with(adri, routing_out_of_source="none", routing_performance_runs=0)
    materialize_graph(dagster_instance, adri, jobs=("classify", "results", "routing"))
    cli_warehouse = adri.settings().warehouse.parent / "cli" / "adri.duckdb"
    assert (
        main(
            [
                "classify",
                "--backend",
                "embedded",
                "--corpus",
                str(SAMPLE),
                "--codebook",
                adri.codebook,
                "--warehouse",
                str(cli_warehouse),
            ]
        )
        == 0
    )
    routing = ["routing", "run", "--dataset", "sample", "--out-of-source", "none", "--runs", "0"]
    assert main([*routing, "--warehouse", str(cli_warehouse)]) == 0
    values = "SELECT doc_id, variable, value, evidencia, audit_status FROM classification_values ORDER BY ALL"
    deterministic = (
        "SELECT dataset, candidate, task, metric, value FROM routing_metrics WHERE metric IN "
        "('accuracy', 'macro_f1', 'ece', 'brier', 'n') ORDER BY ALL"
    )
    for sql in (values, deterministic):
        assert Warehouse(cli_warehouse).query(sql).equals(adri.warehouse_access().query(sql)), sql


def test_every_asset_declares_its_code_version():
    """Dagster marks an asset stale when its code version changes; none was declared."""
    from adri_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    missing = [
        key.to_user_string()
        for key in graph.get_all_asset_keys()
        if graph.get(key).is_materializable and not graph.get(key).code_version
    ]
    assert not missing, missing
