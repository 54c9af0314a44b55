"""Reports jobs."""

import dagster as dg

from adri_pipeline.defs.reports.assets import review_site

review_job = dg.define_asset_job(
    "review_job", selection=dg.AssetSelection.assets(review_site),
    description="Write the static review pages from what the warehouse and the reports hold.",
)
