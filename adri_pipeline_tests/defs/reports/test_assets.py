"""The analyst snapshot's materialization describes what analysts open: Dagster's standard column
schema and row count, built from the warehouse's own comments."""

import dagster as dg

from adri_pipeline.defs.reports.assets import analyst_snapshot
from adri_pipeline.in_process import resources_for
from adri_pipeline.warehouse import Warehouse, store_corpus


def test_the_snapshot_carries_its_column_schema_and_row_count(dagster_instance, adri, sample_corpus):
    store_corpus(Warehouse(adri.settings().warehouse), sample_corpus)
    result = dg.materialize([analyst_snapshot], instance=dagster_instance, resources=resources_for(adri))
    [event] = result.asset_materializations_for_node("analyst_snapshot")
    metadata = event.metadata
    columns = {c.name: c for c in metadata["dagster/column_schema"].value.columns}
    assert "documents.doc_id" in columns and "schema_migrations.version" in columns
    assert all(c.description for c in columns.values())
    assert columns["classification_figures.literal_share"].type == "DOUBLE"
    assert metadata["dagster/row_count"].value >= sample_corpus.documents.height  # documents, and every other table
    assert "tables" in metadata
