"""The mirror in Dagster: shadow log, sample, judgements, evaluation, recommended gate configuration."""

import dagster as dg

from adri_pipeline.defs.mirror import assets
from adri_pipeline.defs.mirror.jobs import mirror_evaluation_job

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets]),
    asset_checks=[assets.shadow_log_quarantine],
    jobs=[mirror_evaluation_job],
)
