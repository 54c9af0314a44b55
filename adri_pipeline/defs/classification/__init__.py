"""Classification in Dagster: corpus, codebook, coders' model, per-document classifications, results,
their jobs, sensors, nightly schedule and quality check."""

import dagster as dg

from adri_pipeline.defs.classification import assets, codebook, coders, corpus
from adri_pipeline.defs.classification.jobs import (
    classify_documents_job,
    classify_shards_job,
    coded_model_job,
    refresh_results_job,
    register_corpus_job,
    results_automation_sensor,
)
from adri_pipeline.defs.classification.schedules import nightly_backfill_schedule
from adri_pipeline.defs.classification.sensors import (
    codebook_change_sensor,
    new_codes_sensor,
    new_documents_sensor,
    reclassify_after_refit_sensor,
    results_after_shard_runs_sensor,
    shard_runs_sensor,
)

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([corpus, codebook, coders, assets]),
    asset_checks=[assets.classification_quality],
    jobs=[classify_documents_job, refresh_results_job, coded_model_job, register_corpus_job, classify_shards_job],
    sensors=[
        new_documents_sensor,
        codebook_change_sensor,
        new_codes_sensor,
        reclassify_after_refit_sensor,
        results_automation_sensor,
        shard_runs_sensor,
        results_after_shard_runs_sensor,
    ],
    schedules=[nightly_backfill_schedule],
)
