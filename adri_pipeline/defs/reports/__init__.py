"""Reports in Dagster: the analyst snapshot and the static review pages."""

import dagster as dg

from adri_pipeline.defs.reports import assets
from adri_pipeline.defs.reports.jobs import review_job

defs = dg.Definitions(assets=dg.load_assets_from_modules([assets]), jobs=[review_job])
