"""The content-hash IO manager's storage: a table is rewritten only when its content changes."""

import polars as pl

from adri_pipeline.defs.io_managers import content_hash
from adri_pipeline.warehouse import read_table, store_versioned_table


def test_a_table_is_rewritten_only_when_its_content_hash_changes(warehouse):
    first = pl.DataFrame({"model": ["m", "m"], "variable": ["a", "b"], "answers": [1, 2]})
    assert store_versioned_table(warehouse, "evidence_audits", first, content_hash(first)) is True
    assert store_versioned_table(warehouse, "evidence_audits", first, content_hash(first)) is False
    second = pl.DataFrame({"model": ["m", "m"], "variable": ["a", "b"], "answers": [1, 3]})
    assert content_hash(second) != content_hash(first)
    assert store_versioned_table(warehouse, "evidence_audits", second, content_hash(second)) is True
    assert read_table(warehouse, "evidence_audits")["answers"].to_list() == [1, 3]


def test_the_content_hash_is_of_the_rows_not_of_their_order_nor_of_the_text_they_print_as():
    """Failed before: the hash was of the CSV text, so the same rows in another order were new content
    (every downstream asset went stale), and an integer column read back as text was the same one."""
    frame = pl.DataFrame({"variable": ["a", "b", "c"], "answers": [1, 2, None]})
    assert content_hash(frame.reverse()) == content_hash(frame)
    assert content_hash(frame.with_columns(pl.col("answers").cast(pl.String))) != content_hash(frame)
    assert content_hash(frame.head(0)) != content_hash(frame.head(0).drop("answers"))


def test_a_table_the_io_manager_writes_is_described_by_its_comments_and_rows(adri):
    import dagster as dg

    from adri_pipeline.defs.io_managers import DuckDBContentHashIOManager

    frame = pl.DataFrame({"model": ["m"], "codebook_hash": ["h"], "variable": ["a"], "answers": [3]})
    context = dg.build_output_context(asset_key=dg.AssetKey("evidence_audits"))
    DuckDBContentHashIOManager(adri=adri).handle_output(context, frame)
    metadata = context.get_logged_metadata()
    assert (
        metadata["dagster/row_count"].value == 1 and metadata["dagster/table_name"].value == "adri.main.evidence_audits"
    )
    schema = metadata["dagster/column_schema"].value
    assert [c.name for c in schema.columns][:4] == ["model", "codebook_hash", "variable", "answers"]
    assert all(c.description for c in schema.columns)
