"""The one warehouse layer, the only place that speaks SQL (its statements in queries/*.sql, the
schema in migrations/*.sql): DuckDB by default, and the shared ledger in PostgreSQL (shared.py).

DuckDB allows one writer per file and an open read-only session blocks every writer, so analysts
never open the writer's file: they read `<name>_snapshot.duckdb`, republished atomically after each
run that writes (docs/classification.md). A module per subject; this package re-exports them, and
no module of it imports the package. catalog.py (the warehouse described by its comments) runs as a
module too (`python -m`), so it is imported by its own name."""

from adri_pipeline.warehouse.coding import (  # noqa: F401
    coding_projects,
    coding_samples,
    read_codes,
    store_codes,
    store_coding_project,
    store_coding_sample,
)
from adri_pipeline.warehouse.connection import (  # noqa: F401
    MIGRATIONS_TABLE,
    SQL_FOLDER,
    Warehouse,
    WarehouseDamaged,
    WarehouseInUse,
    WarehouseLocked,
    WarehouseMissing,
    WarehouseSchemaError,
    interrupts_given_back,
    migrate,
    migrations,
    sql,
    transaction,
)
from adri_pipeline.warehouse.corpus import (  # noqa: F401
    STORE_SLICE_ROWS,
    DocumentClash,
    corpus_files,
    coverage_totals,
    read_documents,
    store_corpus,
    stored_corpus,
)
from adri_pipeline.warehouse.ledger import (  # noqa: F401
    VECTOR_COLUMNS,
    ledger_select,
    ledger_writer,
    read_vectors,
    store_vectors,
)
from adri_pipeline.warehouse.mirror import (  # noqa: F401
    read_mirror_evaluations,
    store_mirror_evaluations,
    store_shadow_log,
)
from adri_pipeline.warehouse.results import (  # noqa: F401
    WideColumn,
    evidence_audit_shares,
    exclusions,
    last_run,
    publish_results_wide,
    read_figures,
    read_results,
    read_table,
    read_values,
    record_run,
    result_keys,
    result_sets,
    store_codebook,
    store_failures,
    store_figures,
    store_results,
    store_versioned_table,
    stored_codebook,
)
from adri_pipeline.warehouse.routing import (  # noqa: F401
    store_routing_tables,
)
