"""Sensors: a changed corpus file is registered (its shards become partitions), then its range is
classified (one run, or with the shared ledger runs side by side, with the results built once after
them); codebook edits reclassify or relabel; new codes refit the coded model, and a new fit
reclassifies (in that order). The sensors that look at the codebook and the coders' file report what
they saw as observations of the `codebook` and `coder_file` sources. No sensor opens the DuckDB warehouse."""

import json
from datetime import datetime, timezone

import dagster as dg

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.prompt import build_prompt
from adri_pipeline.classification.shards import shard_ranges
from adri_pipeline.defs.classification.codebook import codebook, codebook_version
from adri_pipeline.defs.classification.coders import coded_model, coder_file, coder_file_version
from adri_pipeline.defs.classification.corpus import document_shards
from adri_pipeline.defs.classification.jobs import (
    BATCH_TAG,
    MODEL_SERVER_TAG,
    classify_documents_job,
    classify_shards_job,
    coded_model_job,
    range_tags,
    refresh_results_job,
    register_corpus_job,
)
from adri_pipeline.defs.metadata import file_hash
from adri_pipeline.defs.resources import SHARED_LEDGER, AdriSettings

DATA_VERSION_TAG = (
    "dagster/data_version"  # Dagster 1.13 has no public accessor for a materialization's data version: its tag
)


def observed(key: dg.AssetKey, version: str) -> dg.AssetObservation:
    """An observation of a source asset with its data version, reported by the sensor that looked:
    the file is hashed once per look, and observing it takes no run."""
    return dg.AssetObservation(asset_key=key, tags={DATA_VERSION_TAG: version})


@dg.sensor(job=register_corpus_job, minimum_interval_seconds=60)
def new_documents_sensor(context: dg.SensorEvaluationContext, adri: AdriSettings):
    """A changed corpus file asks for register_corpus_job: the corpus stored, its documents' shards
    registered; shard_runs_sensor then classifies every shard (a new document may land in a shard
    already registered, and the ledger skips whatever is classified). The sensor reads only the
    file's hash: it never opens the warehouse, whose one writer may be running."""
    settings = adri.settings()
    corpus_hash = file_hash(settings.corpus)
    if context.cursor == corpus_hash:
        return dg.SkipReason("corpus unchanged")
    return dg.SensorResult(run_requests=[register_then_classify(f"corpus-{corpus_hash[:16]}")], cursor=corpus_hash)


@dg.sensor(jobs=[classify_documents_job, refresh_results_job, register_corpus_job], minimum_interval_seconds=60)
def codebook_change_sensor(context: dg.SensorEvaluationContext, adri: AdriSettings):
    """A definition edit (signature changed) reclassifies every document whose cache key changed;
    a label- or version-only edit only rebuilds the results from the ledger."""
    settings = adri.settings()
    version = codebook_version(settings)
    previous = json.loads(context.cursor) if context.cursor else None
    if previous is not None and previous["codebook_hash"] == version:
        return dg.SkipReason("codebook unchanged")
    signature = build_prompt(load_codebook(settings.codebook)).signature
    cursor = json.dumps({"codebook_hash": version, "signature": signature})
    seen = [observed(codebook.key, version)]  # the source's new version, recorded on the asset
    if previous is None:
        return dg.SensorResult(
            cursor=cursor, asset_events=seen, skip_reason=dg.SkipReason("first look at the codebook")
        )
    if previous["signature"] == signature:
        request = dg.RunRequest(job_name=refresh_results_job.name, run_key=f"labels-{version[:16]}")
        return dg.SensorResult(run_requests=[request], cursor=cursor, asset_events=seen)
    keys = context.instance.get_dynamic_partitions(document_shards.name)
    if not keys:
        return dg.SensorResult(
            cursor=cursor, asset_events=seen, skip_reason=dg.SkipReason("no documents registered yet")
        )
    if settings.ledger_url:
        return dg.SensorResult(
            run_requests=[register_then_classify(f"signature-{signature[:16]}")], cursor=cursor, asset_events=seen
        )
    request = dg.RunRequest(
        job_name=classify_documents_job.name, run_key=f"signature-{signature[:16]}", tags=range_tags(keys)
    )
    return dg.SensorResult(run_requests=[request], cursor=cursor, asset_events=seen)


@dg.sensor(job=coded_model_job, minimum_interval_seconds=60)
def new_codes_sensor(context: dg.SensorEvaluationContext, adri: AdriSettings):
    """A changed coders' file refits the coded model; the reclassification waits for the new fit
    (reclassify_after_refit_sensor), so it never runs with the old one."""
    settings = adri.settings()
    if settings.coders is None:
        return dg.SkipReason("no coders' file configured (ADRI_CODERS)")
    version = coder_file_version(settings)
    if context.cursor == version:
        return dg.SkipReason("coders' file unchanged")
    seen = [observed(coder_file.key, version)]  # the source's new version, recorded on the asset
    if context.cursor is None:
        return dg.SensorResult(
            cursor=version, asset_events=seen, skip_reason=dg.SkipReason("first look at the coders' file")
        )
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"coded-{version[:16]}")], cursor=version, asset_events=seen
    )


@dg.sensor(jobs=[classify_documents_job, register_corpus_job], minimum_interval_seconds=60)
def reclassify_after_refit_sensor(context: dg.SensorEvaluationContext, adri: AdriSettings):
    """A new fit of the coded model (a new digest in its latest materialization) reclassifies every
    document when the embedded backend is the one in use: the fit is part of each answer's cache key.
    A served model's answers stand. The cursor is the last digest handled."""
    event = context.instance.get_latest_materialization_event(coded_model.key)
    digest = event.asset_materialization.tags.get(DATA_VERSION_TAG, "") if event and event.asset_materialization else ""
    if digest in ("", "zero-shot") or digest == context.cursor:
        return dg.SkipReason("no new fit of the coded model")
    if adri.settings().backend != "embedded":
        return dg.SensorResult(
            cursor=digest,
            skip_reason=dg.SkipReason(
                f"backend {adri.settings().backend}: its answers do not depend on the coded model"
            ),
        )
    keys = context.instance.get_dynamic_partitions(document_shards.name)
    if not keys:
        return dg.SensorResult(cursor=digest, skip_reason=dg.SkipReason("no documents registered yet"))
    if adri.settings().ledger_url:
        return dg.SensorResult(run_requests=[register_then_classify(f"codes-{digest[:16]}")], cursor=digest)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(job_name=classify_documents_job.name, run_key=f"codes-{digest[:16]}", tags=range_tags(keys))
        ],
        cursor=digest,
    )


# -- the shared ledger: a range as many runs, the results once after them -------------------------


def register_then_classify(run_key: str) -> dg.RunRequest:
    """With the shared ledger every launch starts here: the corpus and prompt stored, the shards
    registered; when that run succeeds, shard_runs_sensor cuts the range into runs."""
    return dg.RunRequest(job_name=register_corpus_job.name, run_key=run_key)


def shard_run_requests(keys: list[str], settings, batch: str) -> list[dg.RunRequest]:
    """One run per ADRI_SHARDS_PER_RUN consecutive shards, tagged with their launch (batch) and the
    model server the run queue limits them by."""
    return [
        dg.RunRequest(
            run_key=f"{batch}-{index}",
            job_name=classify_shards_job.name,
            tags={**range_tags(part), BATCH_TAG: batch, MODEL_SERVER_TAG: settings.model_server},
        )
        for index, part in enumerate(shard_ranges(keys, settings.shards_per_run))
    ]


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[register_corpus_job],
    request_job=classify_shards_job,
    minimum_interval_seconds=5,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def shard_runs_sensor(context: dg.RunStatusSensorContext, adri: AdriSettings):
    """After the corpus is registered, every registered shard is classified (the ledger skips what is
    answered, so only new work is done): in one run on one machine (the warehouse's one writer), or
    with the shared ledger as runs side by side, which the run queue starts as the model server's
    limit allows."""
    settings = adri.settings()
    keys = context.instance.get_dynamic_partitions(document_shards.name)
    if not keys:
        return dg.SkipReason("no documents registered")
    if not settings.ledger_url:
        return dg.RunRequest(
            run_key=context.dagster_run.run_id, job_name=classify_shards_job.name, tags=range_tags(keys)
        )
    return shard_run_requests(keys, settings, batch=context.dagster_run.run_id)


_STILL_RUNNING = {
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
}
WILL_RETRY_TAG, RETRIED_AS_TAG = "dagster/will_retry", "dagster/auto_retry_run_id"


def batch_pending(runs) -> bool:
    """Whether a launch still has work coming: a run not finished, or a failed one that run retries
    will start again and have not yet."""
    return any(
        run.status in _STILL_RUNNING
        or (
            run.status == dg.DagsterRunStatus.FAILURE
            and run.tags.get(WILL_RETRY_TAG) == "true"
            and RETRIED_AS_TAG not in run.tags
        )
        for run in runs
    )


CURSOR_OVERLAP_S = 1.0  # runs created this close before the cursor are read again: a run key dedupes them


def results_requests(records) -> tuple[list[dg.RunRequest], float | None]:
    """From run records of classify_shards_job: a results request for each launch all of whose runs
    (and their retries) ended, and where the next evaluation may start reading — the creation time of
    the oldest run of a launch still pending, or else of the newest run read (None: nothing read)."""
    batches: dict[str, list] = {}
    for record in records:
        if BATCH_TAG in record.dagster_run.tags:
            batches.setdefault(record.dagster_run.tags[BATCH_TAG], []).append(record)
    pending = {batch for batch, members in batches.items() if batch_pending([r.dagster_run for r in members])}
    requests = [
        dg.RunRequest(run_key=f"results-{batch}", tags={BATCH_TAG: batch}) for batch in batches if batch not in pending
    ]
    stamps = [r.create_timestamp.timestamp() for batch in pending for r in batches[batch]] or [
        r.create_timestamp.timestamp() for r in records
    ]
    return requests, (min(stamps) if pending else max(stamps)) if stamps else None


@dg.sensor(
    job=refresh_results_job,
    minimum_interval_seconds=5,
    default_status=dg.DefaultSensorStatus.RUNNING if SHARED_LEDGER else dg.DefaultSensorStatus.STOPPED,
)
def results_after_shard_runs_sensor(context: dg.SensorEvaluationContext):
    """Results, audits, agreement and the analyst snapshot built once per launch, when all of its
    runs (and their retries) have ended: never per run, and never while one still commits. Reads only
    the runs created since the oldest launch still pending (the cursor), not every run of the job."""
    since = float(context.cursor) - CURSOR_OVERLAP_S if context.cursor else None
    records = context.instance.get_run_records(
        dg.RunsFilter(
            job_name=classify_shards_job.name,
            created_after=datetime.fromtimestamp(since, timezone.utc) if since is not None else None,
        )
    )
    requests, cursor = results_requests(records)
    if cursor is not None:
        context.update_cursor(str(cursor))
    return requests or dg.SkipReason("no launch has ended since the last evaluation")
