"""Group `corpus`: the documents to classify, registered in the warehouse."""

import dagster as dg

from adri_pipeline.classification.corpus import read_corpus
from adri_pipeline.defs.io_managers import content_hash
from adri_pipeline.defs.metadata import table_metadata
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.warehouse import store_corpus

documents_partitions = dg.DynamicPartitionsDefinition(name="documents")


@dg.asset(group_name="corpus", kinds={"duckdb", "polars"})
def corpus(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.MaterializeResult:
    """Documents with an abstract (table `documents`) and per-file coverage (table `coverage`)."""
    settings = adri.settings()
    loaded = read_corpus(settings)
    store_corpus(adri.warehouse_access(), loaded)
    for skip in loaded.skipped[:20]:
        context.log.warning(skip)
    coverage = loaded.coverage.with_columns(loaded.coverage["source"].str.split("/").list.last())
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content_hash(loaded.documents)),
        metadata={
            "documents": loaded.documents.height,
            "excluded_no_abstract": int(loaded.coverage["excluded_no_abstract"].sum()),
            "skipped_duplicates": len(loaded.skipped),
            "coverage": table_metadata(coverage),
            "corpus_path": str(settings.corpus),
        },
    )

