"""Sensors: new documents become partitions and one range run; codebook edits reclassify or relabel."""

import json

import dagster as dg

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.prompt import build_prompt
from adri_pipeline.classification.service import new_documents
from adri_pipeline.defs.classification.corpus import documents_partitions
from adri_pipeline.defs.classification.jobs import (
    classify_documents_job,
    coded_model_job,
    range_tags,
    refresh_results_job,
)
from adri_pipeline.defs.metadata import file_hash
from adri_pipeline.defs.resources import AdriSettings


@dg.sensor(job=classify_documents_job, minimum_interval_seconds=60)
def new_documents_sensor(context: dg.SensorEvaluationContext, adri: AdriSettings):
    """Registers documents not yet partitioned and asks for one run over the new key range."""
    settings = adri.settings()
    corpus_hash = file_hash(settings.corpus)
    if context.cursor == corpus_hash:
        return dg.SkipReason("corpus unchanged")
    _, new = new_documents(settings, set(context.instance.get_dynamic_partitions(documents_partitions.name)))
    if not new:
        return dg.SensorResult(cursor=corpus_hash, skip_reason=dg.SkipReason("no new documents"))
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"new-{corpus_hash[:16]}", tags=range_tags(new))],
        dynamic_partitions_requests=[documents_partitions.build_add_request(new)],
        cursor=corpus_hash,
    )


@dg.sensor(jobs=[classify_documents_job, refresh_results_job], minimum_interval_seconds=60)
def codebook_change_sensor(context: dg.SensorEvaluationContext, adri: AdriSettings):
    """A definition edit (signature changed) reclassifies every document whose cache key changed;
    a label- or version-only edit only rebuilds the results from the ledger."""
    settings = adri.settings()
    book = load_codebook(settings.codebook)
    signature = build_prompt(book).signature
    previous = json.loads(context.cursor) if context.cursor else None
    cursor = json.dumps({"codebook_hash": book.content_hash, "signature": signature})
    if previous is None:
        return dg.SensorResult(cursor=cursor, skip_reason=dg.SkipReason("first look at the codebook"))
    if previous["codebook_hash"] == book.content_hash:
        return dg.SkipReason("codebook unchanged")
    if previous["signature"] == signature:
        request = dg.RunRequest(job_name=refresh_results_job.name, run_key=f"labels-{book.content_hash[:16]}")
        return dg.SensorResult(run_requests=[request], cursor=cursor)
    keys = context.instance.get_dynamic_partitions(documents_partitions.name)
    if not keys:
        return dg.SensorResult(cursor=cursor, skip_reason=dg.SkipReason("no documents registered yet"))
    request = dg.RunRequest(job_name=classify_documents_job.name, run_key=f"signature-{signature[:16]}",
                            tags=range_tags(keys))
    return dg.SensorResult(run_requests=[request], cursor=cursor)


@dg.sensor(jobs=[coded_model_job, classify_documents_job], minimum_interval_seconds=60)
def new_codes_sensor(context: dg.SensorEvaluationContext, adri: AdriSettings):
    """A changed coders' file refits the coded model; when the embedded backend is the one in use, every
    document is asked again (the new fit's cache keys are new; Ollama's are untouched)."""
    settings = adri.settings()
    if settings.coders is None:
        return dg.SkipReason("no coders' file configured (ADRI_CODERS)")
    coders_hash = file_hash(settings.coders)
    if context.cursor is None:
        return dg.SensorResult(cursor=coders_hash, skip_reason=dg.SkipReason("first look at the coders' file"))
    if context.cursor == coders_hash:
        return dg.SkipReason("coders' file unchanged")
    requests = [dg.RunRequest(job_name=coded_model_job.name, run_key=f"coded-{coders_hash[:16]}")]
    keys = context.instance.get_dynamic_partitions(documents_partitions.name)
    if settings.backend == "embedded" and keys:
        requests.append(dg.RunRequest(job_name=classify_documents_job.name, run_key=f"codes-{coders_hash[:16]}",
                                      tags=range_tags(keys)))
    return dg.SensorResult(run_requests=requests, cursor=coders_hash)


@dg.run_status_sensor(run_status=dg.DagsterRunStatus.SUCCESS, monitored_jobs=[classify_documents_job],
                      request_job=refresh_results_job)
def results_after_classification_sensor(context: dg.RunStatusSensorContext):
    """Every successful classification run is followed by a results refresh."""
    return dg.RunRequest(run_key=f"results-after-{context.dagster_run.run_id}")


@dg.run_status_sensor(run_status=dg.DagsterRunStatus.FAILURE, monitored_jobs=[classify_documents_job],
                      request_job=refresh_results_job)
def results_after_failed_classification_sensor(context: dg.RunStatusSensorContext):
    """A failed or stopped range run wrote results for what it did; the refresh records them in Dagster."""
    return dg.RunRequest(run_key=f"results-after-{context.dagster_run.run_id}")
