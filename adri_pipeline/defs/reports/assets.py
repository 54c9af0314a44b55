"""Group `reports`: the analyst snapshot, republished after everything that writes."""

import dagster as dg

from adri_pipeline.classification.context import RunContext
from adri_pipeline.defs.automation import AFTER_UPSTREAM
from adri_pipeline.defs.classification.codebook import recorded_codebook
from adri_pipeline.defs.metadata import warehouse_file
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings
from adri_pipeline.reports.review import write_review
from adri_pipeline.warehouse.catalog import snapshot_description


@dg.asset(
    code_version="1",
    pool=DUCKDB_WRITER,
    group_name="reports",
    deps=["evidence_audits", "validation_agreement", "findings_corrected"],
    kinds={"duckdb"},
    automation_condition=AFTER_UPSTREAM,
)
def analyst_snapshot(adri: AdriSettings) -> dg.MaterializeResult:
    """A copy of the warehouse analysts can hold open without blocking the pipeline. Its metadata
    describes what they open: every table's columns with their comments, and the rows."""
    warehouse = adri.warehouse_access()
    path = warehouse.publish_snapshot()
    return dg.MaterializeResult(
        metadata={"path": str(path), "bytes": path.stat().st_size, **warehouse_file(snapshot_description(warehouse))}
    )


@dg.asset(
    code_version="1",
    pool=DUCKDB_WRITER,
    group_name="reports",
    deps=[analyst_snapshot, "routing_benchmark", "recommended_gate_configuration"],
)
def review_site(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.MaterializeResult:
    """Static review pages (HTML, opened from disk): what the corpus says (findings), evidence
    highlighted in each abstract, models compared, the ADR's figures, the routing and mirror reports;
    on the codebook prompt_signature recorded."""
    site = write_review(RunContext.load(adri.settings(), recorded_codebook(context, adri)))
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(site.index)), "pages": len(site.pages)})
