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
