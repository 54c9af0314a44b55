"""Group `reports`: the analyst snapshot, republished after everything that writes."""

import dagster as dg

from adri_pipeline.assets.classification import evidence_audits, validation_agreement
from adri_pipeline.resources import AdriSettings


@dg.asset(group_name="reports", deps=[evidence_audits, validation_agreement], kinds={"duckdb"})
def analyst_snapshot(adri: AdriSettings) -> dg.MaterializeResult:
    """A copy of the warehouse analysts can hold open without blocking the pipeline."""
    path = adri.warehouse_access().publish_snapshot()
    return dg.MaterializeResult(metadata={"path": str(path), "bytes": path.stat().st_size})
