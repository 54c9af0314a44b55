"""Routing jobs."""

import dagster as dg

routing_benchmark_job = dg.define_asset_job(
    "routing_benchmark_job",
    selection=dg.AssetSelection.groups("routing"),
    description="Build the JEV examples (frozen test split checked) and run every routing candidate.",
)
