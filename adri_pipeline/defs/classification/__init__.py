"""Classification in Dagster: corpus, codebook, coders' model, per-document classifications, results,
their jobs, sensors, nightly schedule and quality check."""

import dagster as dg

from adri_pipeline.defs.classification import assets, codebook, coders, corpus
from adri_pipeline.defs.classification.jobs import classify_documents_job, coded_model_job, refresh_results_job
from adri_pipeline.defs.classification.schedules import nightly_backfill_schedule
from adri_pipeline.defs.classification.sensors import (
    codebook_change_sensor,
    new_codes_sensor,
    new_documents_sensor,
    results_after_classification_sensor,
    results_after_failed_classification_sensor,
)

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([corpus, codebook, coders, assets]),
    asset_checks=[assets.classification_quality],
    jobs=[classify_documents_job, refresh_results_job, coded_model_job],
    sensors=[new_documents_sensor, codebook_change_sensor, new_codes_sensor, results_after_classification_sensor,
             results_after_failed_classification_sensor],
    schedules=[nightly_backfill_schedule],
)
