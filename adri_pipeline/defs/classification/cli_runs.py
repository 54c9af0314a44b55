"""`adri classify` runs in Dagster's asset history. The command line classifies outside Dagster, into
the same warehouse and ledger; reported as runless materializations (origin "cli"), its runs appear
beside Dagster's own in `classifications` and `analyst_snapshot`, with the run id and the warehouse.
Runs inside Dagster record themselves (assets.py); only the command line calls this."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import dagster as dg

from adri_pipeline.classification.shards import shards_to_record, tally_shards
from adri_pipeline.config import Settings
from adri_pipeline.defs.classification.assets import classifications
from adri_pipeline.defs.classification.corpus import register_shards
from adri_pipeline.defs.reports.assets import analyst_snapshot

ORIGIN = "cli"


def record_cli_run(home: Path, settings: Settings, run) -> tuple[list[str], bool]:
    """`run` (service.ClassificationRun) in the instance at `home`: its documents' shards registered as
    partitions; a materialization of each shard that got new answers, or holds answers Dagster never
    recorded (what a range run records after a stop); and one of the analyst snapshot when the run
    answered anything, which republished it. Returns (the shards recorded, whether the snapshot was)."""
    report = run.report
    common = {"origin": ORIGIN, "run_id": run.run_id, "model": run.model.model, "warehouse": str(settings.warehouse)}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        register_shards(instance, list(report.keys))
        tallies = tally_shards(report.keys, report.answered, report.answered_now)
        shards = shards_to_record(tallies, instance.get_materialized_partitions(classifications.key))
        for shard in shards:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(
                    classifications.key, partition=shard, metadata={**common, **asdict(tallies[shard])}
                )
            )
        if report.classified:
            instance.report_runless_asset_event(
                dg.AssetMaterialization(
                    analyst_snapshot.key,
                    metadata={
                        **common,
                        "path": str(run.snapshot),
                        "documents": report.documents,
                        "new": report.classified,
                    },
                )
            )
    return shards, bool(report.classified)
