"""Group `classification`: classifications partitioned by shard of documents (defs/classification/corpus.py),
results per (model, codebook), evidence audits, agreement with coders, checks."""

from dataclasses import asdict

import dagster as dg
import polars as pl

from adri_pipeline.classification.agreement import AGREEMENT_SCHEMA, agreement_table, load_coder_labels
from adri_pipeline.classification.backends.base import BackendError
from adri_pipeline.classification.backends.select import WITHOUT_SERVER
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.prompt import PROMPT_VERSION
from adri_pipeline.classification.publishing import refresh_results
from adri_pipeline.classification.results import figures_table
from adri_pipeline.classification.service import (
    check_quality,
    classify_documents,
    classify_shards,
    pull_shared_ledger,
    recorded_model,
    resolve_backend,
)
from adri_pipeline.classification.shards import ShardTally, shard_of, shards_to_record, tally_shards
from adri_pipeline.defs.automation import AFTER_UPSTREAM
from adri_pipeline.defs.classification.codebook import codebook, prompt_signature, recorded_codebook
from adri_pipeline.defs.classification.coders import coded_model
from adri_pipeline.defs.classification.corpus import corpus, document_shards
from adri_pipeline.defs.io_managers import content_hash, versioned
from adri_pipeline.defs.metadata import table_metadata, warehouse_table
from adri_pipeline.defs.resources import DEPLOYED, DUCKDB_WRITER, SHARED_LEDGER, AdriSettings
from adri_pipeline.progress import DocumentsDone
from adri_pipeline.warehouse import (
    evidence_audit_shares,
    read_documents,
    read_results,
    read_values,
)
from adri_pipeline.warehouse.catalog import table_description


def _classify(context: dg.AssetExecutionContext, run: RunContext, shards: set[str], progress, backend):
    """The run's shards classified: (the run's report, the documents of those shards)."""
    if run.settings.ledger_url:
        report = classify_shards(
            run, sorted(shards), origin="dagster", run_id=context.run.run_id, progress=progress, backend=backend
        )
        return report, pl.DataFrame({"doc_id": list(report.keys)}, schema={"doc_id": pl.String})
    stored = read_documents(run.warehouse)
    documents = stored.filter(pl.Series([shard_of(doc_id) in shards for doc_id in stored["doc_id"]], dtype=pl.Boolean))
    return classify_documents(
        run, documents, origin="dagster", run_id=context.run.run_id, progress=progress, backend=backend
    ).report, documents


def _backend(run: RunContext):
    """The run's backend. A missing model server is a configuration error: the run fails at its start
    with one line that names the server and the way to run without one, not a stack trace."""
    try:
        return resolve_backend(run, allow_fallback=False)
    except BackendError as exc:
        reason = " ".join(str(exc).split())
        if WITHOUT_SERVER not in reason:
            reason = f"{reason}; {WITHOUT_SERVER}"
        raise dg.Failure(description=reason, allow_retries=False) from None


def _recorded_shards(context: dg.AssetExecutionContext, report, tallies: dict[str, ShardTally]) -> list[str]:
    """The shards a run records as materialized. A run that reached its end records every shard it was
    asked for, cached or not: a backfill marks a requested partition its successful run left unrecorded
    as failed. A stopped run records the shards that got new answers, or hold answers and were never
    recorded; the rest stay to do."""
    if not report.stopped:
        return sorted(context.partition_keys)
    return shards_to_record(tallies, context.instance.get_materialized_partitions(context.asset_key))


@dg.asset(
    code_version=PROMPT_VERSION,
    group_name="classification",
    partitions_def=document_shards,
    # one machine: one run per range, the one writer of the warehouse; with the shared ledger, runs of
    # ADRI_SHARDS_PER_RUN shards side by side, limited per model server by the run queue (deploy/)
    backfill_policy=(
        dg.BackfillPolicy.multi_run(DEPLOYED.shards_per_run) if SHARED_LEDGER else dg.BackfillPolicy.single_run()
    ),
    pool=None if SHARED_LEDGER else DUCKDB_WRITER,
    deps=[corpus, prompt_signature, coded_model],
    output_required=False,
    kinds={"postgres"} if SHARED_LEDGER else {"duckdb"},
)
def classifications(context: dg.AssetExecutionContext, adri: AdriSettings):
    """Classifies the stored documents of the run's shards that the ledger lacks, with the backend
    resolved once (recorded in the run's tags and `classification_runs`; `auto` never falls back here).
    With the shared ledger (ADRI_LEDGER_URL) the run reads and commits in PostgreSQL only and the
    results are built once after the range's runs (results_after_shard_runs_sensor). Each shard's
    materialization says how many of its documents are answered and how many of those are new
    (_recorded_shards: which shards are recorded)."""
    settings = adri.settings()
    shards = set(context.partition_keys)
    run = RunContext.load(settings, recorded_codebook(context, adri))
    backend = _backend(run)
    context.instance.add_run_tags(
        context.run.run_id, {"adri/model": backend.model, "adri/model_digest": backend.digest or "-"}
    )
    # a progress line on stderr (the terminal of `adri demo`, the run's compute log under the daemon),
    # and every 50 documents a line in the run's event log
    line = DocumentsDone(
        f"classifying shards {min(shards)}..{max(shards)}" if len(shards) > 1 else f"classifying {next(iter(shards))}"
    )
    done = [0]  # documents the model was asked about in this run

    def progress(outcome, total):
        done[0] += 1
        line(outcome, total)
        if done[0] % 50 == 0:
            context.log.info(f"{done[0]}/{total} documents answered")

    try:
        report, documents = _classify(context, run, shards, progress, backend)
    finally:
        line.close()
    tallies = tally_shards(documents["doc_id"], report.answered, report.answered_now)
    recorded = _recorded_shards(context, report, tallies)
    for shard in recorded:
        yield dg.AssetMaterialization(
            asset_key=context.asset_key,
            partition=shard,
            metadata={"model": backend.model, **asdict(tallies.get(shard, ShardTally()))},
        )
    context.log.info(
        f"{report.documents} documents in {len(shards)} shards: {report.cached} cached, "
        f"{report.classified} classified, {len(report.failed)} failed, "
        f"{len(recorded)} shard materializations recorded; "
        + ("results follow once the range's runs end" if settings.ledger_url else "results and snapshot refreshed")
    )
    for doc_id, reason in report.failed[:20]:
        context.log.warning(f"no answer that follows the codebook for {doc_id}: {reason}")
    if report.stopped:
        raise dg.Failure(description=f"stopped early: {report.stopped}")


@dg.asset(
    code_version="1",
    pool=DUCKDB_WRITER,
    group_name="classification",
    deps=[classifications, prompt_signature, codebook],
    kinds={"duckdb"},
    automation_condition=AFTER_UPSTREAM,
)
def classification_results(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.MaterializeResult:
    """Tables `classification_values`, `classification_documents` and `classification_figures` for the
    model the latest classification run recorded and the current codebook: no model call, no choosing.
    With the shared ledger, its new answers, runs and failures are pulled into the warehouse first.
    Its table metadata describes `classification_values`."""
    settings = adri.settings()
    warehouse = adri.warehouse_access()
    book = recorded_codebook(context, adri)
    pulled = pull_shared_ledger(settings, warehouse)  # with the shared ledger: what its runs committed
    if pulled is not None:
        context.log.info(f"{len(pulled)} answer(s) pulled from the shared ledger")
    model = recorded_model(warehouse)  # what was just classified: its results are (re)built
    summary = refresh_results(warehouse, book, model)
    values, _, _ = read_results(warehouse, model.model, book.content_hash)
    table = figures_table(summary, model.model, book.content_hash)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content_hash(values)),
        metadata={
            "model": model.model,
            "model_digest": model.digest,
            "codebook_hash": book.content_hash,
            "codebook_version": book.version,
            **summary.model_dump(
                include={
                    "documents",
                    "pending",
                    "json_valid_first_try_share",
                    "valid_first_try_share",
                    "retry_share",
                    "seconds_median",
                    "seconds_p90",
                }
            ),
            "figures": table_metadata(table) if table.height else "none",
            **warehouse_table(table_description(warehouse, "classification_values")),
        },
    )


@dg.asset(
    code_version="1",
    pool=DUCKDB_WRITER,
    group_name="classification",
    deps=[classification_results],
    io_manager_key="content_hash_io_manager",
    automation_condition=AFTER_UPSTREAM,
)
def evidence_audits(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.Output:
    """Literal / approximate / absent shares among quoted answers, waived counted apart, per (model,
    codebook, variable): the same definition as the ADR's figures in classification_results."""
    book = recorded_codebook(context, adri)
    frame = evidence_audit_shares(adri.warehouse_access(), book.content_hash)
    return versioned(frame, table=table_metadata(frame))


@dg.asset(
    code_version="1",
    pool=DUCKDB_WRITER,
    group_name="classification",
    deps=[classification_results],
    io_manager_key="content_hash_io_manager",
    automation_condition=AFTER_UPSTREAM,
)
def validation_agreement(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.Output:
    """Agreement and Cohen's kappa per (model, variable) against human coders (ADRI_CODERS)."""
    settings = adri.settings()
    book = recorded_codebook(context, adri)
    if settings.coders is None:
        context.log.info("no coder labels configured (ADRI_CODERS): agreement table left empty")
        return versioned(pl.DataFrame(schema=AGREEMENT_SCHEMA), coders="none configured")
    results = read_values(adri.warehouse_access(), book.content_hash)
    table = agreement_table(results, load_coder_labels(settings.coders, book), book)
    return versioned(table, coders=str(settings.coders), table=table_metadata(table))


@dg.asset_check(asset=classification_results, blocking=False)
def classification_quality(context: dg.AssetCheckExecutionContext, adri: AdriSettings) -> dg.AssetCheckResult:
    """Valid responses, literal evidence (overall and per variable) and corpus coverage against the
    thresholds in Settings, of the model whose results `classification_results` last built (its
    metadata's `model`); a failure names the documents and variables."""
    built = context.instance.get_latest_materialization_event(classification_results.key)
    model = built.asset_materialization.metadata.get("model") if built and built.asset_materialization else None
    run = RunContext.load(adri.settings(), recorded_codebook(context, adri))
    quality = check_quality(run, model.value if model is not None else None)
    return dg.AssetCheckResult(passed=quality.passed, description=quality.description, metadata=quality.figures)
