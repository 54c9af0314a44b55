"""Group `corpus`: the documents to classify, registered in the warehouse, and the shards of
documents that partition their classification."""

import dagster as dg

from adri_pipeline.classification.corpus import READER_VERSION
from adri_pipeline.classification.corpus_reading import corpus_document_ids, register_corpus
from adri_pipeline.classification.shards import shards_of
from adri_pipeline.config import Settings
from adri_pipeline.defs.io_managers import content_hash
from adri_pipeline.defs.metadata import table_metadata, warehouse_table
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings
from adri_pipeline.warehouse import Warehouse
from adri_pipeline.warehouse.catalog import table_description

# One partition per shard of documents, not per document (classification/shards.py).
document_shards = dg.DynamicPartitionsDefinition(name="document_shards")


def unregistered_shards(doc_ids, registered: list[str]) -> list[str]:
    """The shards of these documents not among `registered`, in key order."""
    known = set(registered)
    return [shard for shard in shards_of(doc_ids) if shard not in known]


def register_shards(instance: dg.DagsterInstance, doc_ids) -> tuple[list[str], list[str]]:
    """(every registered shard, in registration order; those added now): what the new-documents sensor
    requests under the daemon, done directly (the demo, tests, benchmarks)."""
    new = unregistered_shards(doc_ids, instance.get_dynamic_partitions(document_shards.name))
    if new:
        instance.add_dynamic_partitions(document_shards.name, new)
    return instance.get_dynamic_partitions(document_shards.name), new


@dg.asset(code_version=f"reader-{READER_VERSION}", pool=DUCKDB_WRITER, group_name="corpus", kinds={"duckdb", "polars"})
def corpus(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.MaterializeResult:
    """Documents with an abstract (table `documents`) and per-file coverage (table `coverage`), in the
    shared ledger too when one is configured; their shards are registered as partitions. Its table
    metadata describes `documents`."""
    settings = adri.settings()
    warehouse = adri.warehouse_access()
    loaded = register_corpus(settings, warehouse)  # an unchanged file is not parsed again
    _, new = register_shards(context.instance, loaded.documents["doc_id"])  # the partitions its runs cover
    for skip in loaded.skipped[:20]:
        context.log.warning(skip)
    coverage = loaded.coverage.with_columns(loaded.coverage["source"].str.split("/").list.last())
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content_hash(loaded.documents)),
        metadata={
            "documents": loaded.documents.height,
            "new_shards": len(new),
            "excluded_no_abstract": int(loaded.coverage["excluded_no_abstract"].sum()),
            "skipped_duplicates": len(loaded.skipped),
            "coverage": table_metadata(coverage),
            "corpus_path": str(settings.corpus),
            **warehouse_table(table_description(warehouse, "documents")),
        },
    )


def register_documents(instance: dg.DagsterInstance, settings: Settings) -> tuple[list[str], int]:
    """What new_documents_sensor does under the daemon: the shards of the corpus's documents become
    partitions. Returns (every registered shard, how many were new)."""
    shards, new = register_shards(instance, corpus_document_ids(settings, Warehouse(settings.warehouse)))
    return shards, len(new)
