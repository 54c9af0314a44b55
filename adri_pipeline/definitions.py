"""The Dagster code location: assets, checks, jobs, sensors, schedule, resources."""

import dagster as dg

from adri_pipeline.defs import (
    classification,
    codebook,
    coders,
    corpus,
    mirror,
    reports,
    routing,
)
from adri_pipeline.defs.io_managers import DuckDBContentHashIOManager
from adri_pipeline.defs.jobs import (
    classify_documents_job,
    coded_model_job,
    mirror_evaluation_job,
    refresh_results_job,
    review_job,
    routing_benchmark_job,
)
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.defs.schedules import nightly_backfill_schedule
from adri_pipeline.defs.sensors import (
    codebook_change_sensor,
    new_codes_sensor,
    new_documents_sensor,
    results_after_classification_sensor,
    results_after_failed_classification_sensor,
)

_settings = AdriSettings()

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([corpus, codebook, coders, classification, reports, routing, mirror]),
    asset_checks=[classification.classification_quality],
    jobs=[classify_documents_job, refresh_results_job, routing_benchmark_job, mirror_evaluation_job, review_job,
          coded_model_job],
    sensors=[new_documents_sensor, codebook_change_sensor, new_codes_sensor, results_after_classification_sensor,
             results_after_failed_classification_sensor],
    schedules=[nightly_backfill_schedule],
    resources={"adri": _settings, "content_hash_io_manager": DuckDBContentHashIOManager(adri=_settings)},
)
