"""Reports jobs."""

import dagster as dg

from adri_pipeline.defs.reports.assets import analyst_snapshot, review_site

# the snapshot again, after the routing and mirror jobs wrote their tables: the last thing published
review_job = dg.define_asset_job(
    "review_job",
    selection=dg.AssetSelection.assets(analyst_snapshot, review_site),
    description="Republish the analyst snapshot and write the static review pages from what the warehouse "
    "and the reports hold.",
)
