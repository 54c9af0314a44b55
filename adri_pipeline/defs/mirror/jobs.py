"""Mirror jobs."""

import dagster as dg

mirror_evaluation_job = dg.define_asset_job(
    "mirror_evaluation_job",
    selection=dg.AssetSelection.groups("mirror"),
    description="Ingest the shadow log, sample, judge, evaluate and write the recommended gate configuration.",
)
