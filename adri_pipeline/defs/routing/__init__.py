"""The routing benchmark in Dagster: examples (frozen test split) and the benchmark run."""

import dagster as dg

from adri_pipeline.defs.routing import assets
from adri_pipeline.defs.routing.jobs import routing_benchmark_job

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets]), asset_checks=[assets.frozen_test_split], jobs=[routing_benchmark_job]
)
