"""Classification jobs, named for what they do."""

import dagster as dg

from adri_pipeline.defs.classification.assets import (
    classification_results,
    classifications,
    evidence_audits,
    validation_agreement,
)
from adri_pipeline.defs.classification.codebook import prompt_signature
from adri_pipeline.defs.classification.coders import coded_model, findings_corrected
from adri_pipeline.defs.classification.corpus import corpus
from adri_pipeline.defs.reports.assets import analyst_snapshot

# classifications records its shards' materializations itself and yields no Output for the range
# (docs/decisions.md), so Dagster would skip anything downstream in the same run: results run apart,
# after the range run, by their automation condition (defs/automation.py).
RESULTS_ONWARD = [classification_results, evidence_audits, validation_agreement, findings_corrected, analyst_snapshot]

classify_documents_job = dg.define_asset_job(
    "classify_documents_job",
    selection=dg.AssetSelection.assets(corpus, prompt_signature, classifications),
    description="Classify a range of documents in one run; the results, audits, agreement and snapshot "
    "follow by declarative automation (results_automation_sensor).",
)

refresh_results_job = dg.define_asset_job(
    "refresh_results_job",
    selection=dg.AssetSelection.assets(prompt_signature, *RESULTS_ONWARD),
    description="Rebuild results, audits, agreement and the analyst snapshot from the ledger: no model call.",
)


register_corpus_job = dg.define_asset_job(
    "register_corpus_job",
    selection=dg.AssetSelection.assets(corpus, prompt_signature),
    description="Store the corpus (in the warehouse and the shared ledger) and the prompt, and register the "
    "documents' shards; with the shared ledger, shard_runs_sensor then launches the range as runs side by side.",
)

classify_shards_job = dg.define_asset_job(
    "classify_shards_job",
    selection=dg.AssetSelection.assets(classifications),
    description="Classify a range of shards (what shard_runs_sensor launches after register_corpus_job). On "
    "one machine one run, the warehouse's writer; with the shared ledger many runs side by side, committing "
    "to PostgreSQL only (the run queue limits them per model server), and the results follow once.",
)

BATCH_TAG = "adri/batch"  # the runs one launch cut a range into: results are built once they all end
MODEL_SERVER_TAG = "adri/model_server"  # the run queue's limit per model server (deploy/dagster.yaml)


def range_tags(keys: list[str]) -> dict[str, str]:
    """One run over a contiguous key range (a reversed range would silently select nothing)."""
    return {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}


coded_model_job = dg.define_asset_job(
    "coded_model_job",
    selection=dg.AssetSelection.assets(coded_model),
    description="Fit the embedded model on the coders' codes, store it, and measure it cross-validated; "
    "reclassify_after_refit_sensor then reclassifies with it.",
)

results_automation_sensor = dg.AutomationConditionSensorDefinition(
    "results_automation_sensor",
    target=dg.AssetSelection.assets(*RESULTS_ONWARD),
    description="Rebuilds results, audits, agreement and the analyst snapshot after classification runs "
    "(their automation condition): turn it on with the other sensors.",
)
