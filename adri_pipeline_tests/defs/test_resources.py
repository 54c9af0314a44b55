"""The `adri` resource as a run sees it."""

from adri_pipeline.defs.resources import AdriSettings


def test_changed_settings_reach_the_run(adri):
    """Failed before with `adri.model_copy(update=...)`, which tests used: the run saw the defaults."""
    import dagster as dg

    from adri_pipeline_tests.conftest import adri_with

    seen = {}

    @dg.asset
    def probe(adri: AdriSettings) -> None:
        seen.update(out_of_source=adri.settings().routing_out_of_source, runs=adri.routing_performance_runs)

    dg.materialize(
        [probe], resources={"adri": adri_with(adri, routing_out_of_source="none", routing_performance_runs=0)}
    )
    assert seen == {"out_of_source": "none", "runs": 0}
