"""The frozen test split as a blocking asset check: a changed split fails it and the benchmark does not run."""

import dagster as dg
import pytest

from adri_pipeline.in_process import materialize_graph
from adri_pipeline.routing import service


def test_a_changed_test_split_fails_the_check_and_blocks_the_benchmark(dagster_instance, adri, monkeypatch):
    monkeypatch.setattr(service, "recorded_hash", lambda *args: "0" * 64)  # as if another split had been frozen
    graph = materialize_graph(dagster_instance, adri, jobs=("routing",), raise_on_error=False)
    [check] = [
        e.asset_check_evaluation_data
        for e in graph.routing.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert not check.passed and "changed: frozen 0000000000000000" in check.description
    assert dagster_instance.get_latest_materialization_event(dg.AssetKey("routing_benchmark")) is None
    assert dagster_instance.get_latest_materialization_event(dg.AssetKey("routing_examples")) is not None


@pytest.mark.slow  # the whole routing graph on the sample (30-60 s); .ci/run runs the slow tests
def test_an_unchanged_split_lets_the_benchmark_run_and_its_verdicts_reach_the_asset(dagster_instance, adri):
    """Failed once the verdicts became typed: the asset's JSON metadata was handed the models themselves."""
    from adri_pipeline.defs.resources import AdriSettings

    quick = AdriSettings(
        warehouse=adri.warehouse,
        corpus=adri.corpus,
        codebook=adri.codebook,
        backend="embedded",
        routing_candidates="sparrow",
        routing_performance_runs=0,
    )
    graph = materialize_graph(dagster_instance, quick, jobs=("routing",))
    assert graph.success
    event = dagster_instance.get_latest_materialization_event(dg.AssetKey("routing_benchmark"))
    verdicts = event.asset_materialization.metadata["verdicts"].value
    assert set(verdicts["sparrow"]) == {"H1", "H2", "H3"} and verdicts["sparrow"]["H1"]["verdict"] == "not evaluated"
