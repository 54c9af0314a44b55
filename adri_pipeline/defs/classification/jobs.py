"""Classification jobs, named for what they do."""

import dagster as dg

from adri_pipeline.defs.classification.assets import (
    classification_results,
    classifications,
    evidence_audits,
    validation_agreement,
)
from adri_pipeline.defs.classification.codebook import prompt_signature
from adri_pipeline.defs.classification.coders import coded_model
from adri_pipeline.defs.classification.corpus import corpus
from adri_pipeline.defs.reports.assets import analyst_snapshot

# classifications records materializations only for documents whose result is new, and yields no
# Output for the range, so Dagster would skip anything downstream in the same run: results run apart.
RESULTS_ONWARD = [classification_results, evidence_audits, validation_agreement, analyst_snapshot]

classify_documents_job = dg.define_asset_job(
    "classify_documents_job",
    selection=dg.AssetSelection.assets(corpus, prompt_signature, classifications),
    description="Classify a range of documents in one run; results_after_classification_sensor "
    "then launches refresh_results_job.",
)

refresh_results_job = dg.define_asset_job(
    "refresh_results_job",
    selection=dg.AssetSelection.assets(prompt_signature, *RESULTS_ONWARD),
    description="Rebuild results, audits, agreement and the analyst snapshot from the ledger: no model call.",
)


def range_tags(keys: list[str]) -> dict[str, str]:
    """One run over a contiguous key range (a reversed range would silently select nothing)."""
    return {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}

coded_model_job = dg.define_asset_job(
    "coded_model_job", selection=dg.AssetSelection.assets(coded_model),
    description="Fit the embedded model on the coders' codes and measure it cross-validated.",
)
