"""Group `reports`: the analyst snapshot, republished after everything that writes."""

import dagster as dg

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.reports.review import build_review


@dg.asset(group_name="reports", deps=["evidence_audits", "validation_agreement"], kinds={"duckdb"})
def analyst_snapshot(adri: AdriSettings) -> dg.MaterializeResult:
    """A copy of the warehouse analysts can hold open without blocking the pipeline."""
    path = adri.warehouse_access().publish_snapshot()
    return dg.MaterializeResult(metadata={"path": str(path), "bytes": path.stat().st_size})


@dg.asset(group_name="reports", deps=[analyst_snapshot, "routing_benchmark", "recommended_gate_configuration"])
def review_site(adri: AdriSettings) -> dg.MaterializeResult:
    """Static review pages (HTML, opened from disk): evidence highlighted in each abstract, models
    compared, the ADR's figures, the routing and mirror reports."""
    settings = adri.settings()
    site = build_review(adri.warehouse_access(), load_codebook(settings.codebook), coders=settings.coders)
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(site.index)), "pages": len(site.pages)})
