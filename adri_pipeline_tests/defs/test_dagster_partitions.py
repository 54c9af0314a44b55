"""The Dagster limitation `classifications` works around (docs/decisions.md, "which partitions a range
run of `classifications` records"): pinned, so that the workaround goes once Dagster lifts it."""

import inspect

import dagster as dg


def test_a_range_run_can_record_chosen_partitions_only_by_materialization_events():
    """If this fails, Dagster's MaterializeResult takes a partition (dagster-io/dagster#17836): record
    the changed shards with it, let `classifications` return an output, and drop the automation
    that rebuilds the results after a range run."""
    assert "partition" not in inspect.signature(dg.MaterializeResult).parameters
    assert "partition" in inspect.signature(dg.AssetMaterialization).parameters


def test_classifications_records_its_partitions_itself_and_returns_no_output():
    from adri_pipeline.defs.classification.assets import classifications

    [output] = classifications.op.output_defs
    assert output.is_required is False
