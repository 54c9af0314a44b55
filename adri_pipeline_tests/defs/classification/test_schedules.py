import datetime

import dagster as dg

from adri_pipeline.defs.classification.schedules import nightly_backfill_schedule


def test_nightly_backfill_is_one_run_over_every_registered_shard(dagster_instance):
    context = dg.build_schedule_context(
        instance=dagster_instance, scheduled_execution_time=datetime.datetime(2026, 11, 30, 2, 0)
    )
    assert isinstance(nightly_backfill_schedule(context), dg.SkipReason)

    dagster_instance.add_dynamic_partitions("document_shards", ["shard-007", "shard-001", "shard-200"])
    request = nightly_backfill_schedule(context)
    assert request.run_key == "nightly-2026-11-30"
    assert request.tags == {
        "dagster/asset_partition_range_start": "shard-007",  # registration order
        "dagster/asset_partition_range_end": "shard-200",
    }
