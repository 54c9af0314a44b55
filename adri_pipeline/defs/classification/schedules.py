"""Nightly backfill: one run over every registered shard of documents; the ledger skips the classified ones."""

import dagster as dg

from adri_pipeline.defs.classification.corpus import document_shards
from adri_pipeline.defs.classification.jobs import classify_documents_job, range_tags


@dg.schedule(job=classify_documents_job, cron_schedule="0 2 * * *", execution_timezone="America/Sao_Paulo")
def nightly_backfill_schedule(context: dg.ScheduleEvaluationContext):
    keys = context.instance.get_dynamic_partitions(document_shards.name)
    if not keys:
        return dg.SkipReason("no documents registered (the new_documents_sensor registers them)")
    return dg.RunRequest(run_key=f"nightly-{context.scheduled_execution_time:%Y-%m-%d}", tags=range_tags(keys))
