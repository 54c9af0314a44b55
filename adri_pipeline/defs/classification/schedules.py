"""Nightly backfill: one run over every registered shard of documents; the ledger skips the classified ones."""

import dagster as dg

from adri_pipeline.defs.classification.corpus import document_shards
from adri_pipeline.defs.classification.jobs import classify_documents_job, range_tags, register_corpus_job
from adri_pipeline.defs.resources import SHARED_LEDGER


@dg.schedule(
    job=register_corpus_job if SHARED_LEDGER else classify_documents_job,
    cron_schedule="0 2 * * *",
    execution_timezone="America/Sao_Paulo",
)
def nightly_backfill_schedule(context: dg.ScheduleEvaluationContext):
    """One machine: one run over every shard. With the shared ledger: the corpus registered, then the
    range as runs side by side (shard_runs_sensor)."""
    run_key = f"nightly-{context.scheduled_execution_time:%Y-%m-%d}"
    if SHARED_LEDGER:
        return dg.RunRequest(run_key=run_key)
    keys = context.instance.get_dynamic_partitions(document_shards.name)
    if not keys:
        return dg.SkipReason("no documents registered (the new_documents_sensor registers them)")
    return dg.RunRequest(run_key=run_key, tags=range_tags(keys))
