"""The warehouse described by its own catalog: every table, view and column has a comment, on a fresh
warehouse, after results_wide is recreated and in the analyst snapshot; docs/warehouse.md's reference
is what the catalog generates."""

from pathlib import Path

import duckdb

from adri_pipeline.warehouse import WideColumn, publish_results_wide
from adri_pipeline.warehouse.catalog import (
    documented_relations,
    reference,
    relations,
    snapshot_description,
    uncommented,
    with_reference,
)

PAGE = Path(__file__).resolve().parents[1] / "docs" / "warehouse.md"


def test_every_table_view_and_column_of_a_fresh_warehouse_has_a_comment(warehouse):
    with warehouse.connect() as con:
        described = relations(con)
    names = {r.name for r in described}
    assert {
        "schema_migrations",
        "documents",
        "ledger",
        "classification_values",
        "findings_corrected",
        "codebook_changes",
    } <= names
    assert uncommented(described) == [], "add a COMMENT ON for each in a migration"
    assert sum(len(r.columns) for r in described) > 300


def test_uncommented_names_the_tables_and_columns_without_a_comment():
    with duckdb.connect() as con:
        con.execute(
            "CREATE TABLE described (a INTEGER, b VARCHAR); COMMENT ON TABLE described IS 'One row per a.';"
            "COMMENT ON COLUMN described.a IS 'The a.'; CREATE TABLE bare (c INTEGER)"
        )
        assert uncommented(relations(con)) == ["bare", "bare.c", "described.b"]


def test_results_wide_has_its_comments_again_each_time_it_is_recreated(warehouse):
    """CREATE OR REPLACE VIEW drops a view's comments: the statement that recreates it sets them again,
    a column per variable quoting the codebook's definition."""
    abordagem = WideColumn("Abordagem metodológica d'o estudo.")
    publish_results_wide(warehouse, {"abordagem": abordagem})
    publish_results_wide(warehouse, {"abordagem": abordagem, "tecnica": WideColumn("Técnica.", is_list=True)})
    with warehouse.connect() as con:
        described = relations(con)
    assert uncommented(described) == []
    [wide] = [r for r in described if r.name == "results_wide"]
    assert wide.kind == "view" and "refreshed last" in wide.comment
    columns = {c.name: c.comment for c in wide.columns}
    assert "Definition: Abordagem metodológica d'o estudo." in columns["abordagem"] and "tecnica" in columns


def test_the_snapshot_carries_every_comment(warehouse):
    publish_results_wide(warehouse, {"abordagem": WideColumn("Abordagem.")})
    warehouse.publish_snapshot()
    with warehouse.connect() as con:
        written = relations(con)
    published = snapshot_description(warehouse)
    assert uncommented(published) == []
    assert [(r.name, r.comment, r.columns) for r in published] == [(r.name, r.comment, r.columns) for r in written]
    assert all(r.rows is not None for r in published if r.kind == "table")


def test_docs_warehouse_md_lists_every_table_as_the_catalog_generates_it():
    described = documented_relations()
    page = PAGE.read_text(encoding="utf-8")
    assert page == with_reference(page, reference(described)), (
        "docs/warehouse.md is stale: .venv/bin/python -m adri_pipeline.warehouse.catalog --write docs/warehouse.md"
    )
    assert all(f"\n### {r.name}\n" in page for r in described)
