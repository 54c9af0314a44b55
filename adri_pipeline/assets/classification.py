"""Group `classification`: per-document classifications (one dynamic partition per document),
results per (model, codebook), evidence audits, agreement with coders, checks."""

import dagster as dg
import polars as pl

from adri_pipeline.agreement import agreement_table, load_coder_labels
from adri_pipeline.assets.codebook import codebook, prompt_signature
from adri_pipeline.assets.corpus import corpus, documents_partitions
from adri_pipeline.assets.metadata import markdown_table
from adri_pipeline.backends import select_backend
from adri_pipeline.cache import Ledger, document_keys
from adri_pipeline.classify import as_documents, classify_corpus
from adri_pipeline.codebook import load_codebook
from adri_pipeline.io_managers import content_hash, versioned
from adri_pipeline.prompt import build_prompt
from adri_pipeline.resources import AdriSettings
from adri_pipeline.results import assemble_results, store_results, summarize
from adri_pipeline.warehouse import Warehouse


def documents_for(warehouse: Warehouse, doc_ids: list[str]) -> pl.DataFrame:
    """Documents in the order of the given ids (ids the warehouse lacks are left out)."""
    frame = warehouse.query("SELECT * FROM documents WHERE list_contains(?, doc_id)", [doc_ids])
    order = pl.DataFrame({"doc_id": doc_ids, "_order": range(len(doc_ids))})
    return frame.join(order, on="doc_id").sort("_order").drop("_order")


@dg.asset(
    group_name="classification", partitions_def=documents_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(), deps=[corpus, prompt_signature],
    output_required=False, kinds={"duckdb"},
)
def classifications(context: dg.AssetExecutionContext, adri: AdriSettings):
    """Classifies the documents of the run's key range that the ledger lacks. A materialization is
    recorded only for documents whose result is new to Dagster; cached ones cost nothing."""
    settings = adri.settings()
    warehouse = Warehouse(settings.warehouse)
    keys = list(context.partition_keys)
    documents = documents_for(warehouse, keys)
    if documents.height < len(keys):
        context.log.warning(f"{len(keys) - documents.height} partition keys are not in the corpus any more")
    book = load_codebook(settings.codebook)
    backend = select_backend(settings)
    classified: list[str] = []

    def progress(outcome, total):
        if outcome.valid:
            classified.append(outcome.document.doc_id)
        if len(classified) % 50 == 0:
            context.log.info(f"{len(classified)}/{total} documents classified")

    report = classify_corpus(documents, book, backend, warehouse,
                             concurrency=settings.concurrency, progress=progress)
    materialized = context.instance.get_materialized_partitions(context.asset_key)
    docs = as_documents(documents)
    keys_of = dict(zip(document_keys(docs, build_prompt(book), backend), (d.doc_id for d in docs)))
    stored = {keys_of[k] for k in Ledger(warehouse).known(list(keys_of))}
    fresh = set(classified) | (stored - materialized)  # cached but never recorded (e.g. killed run)
    for doc_id in (k for k in keys if k in fresh):
        yield dg.AssetMaterialization(asset_key=context.asset_key, partition=doc_id,
                                      metadata={"model": backend.model})
    context.log.info(f"{report.documents} documents in range: {report.cached} cached, "
                     f"{report.classified} classified, {len(report.failed)} failed, "
                     f"{len(fresh)} materializations recorded")
    for doc_id, reason in report.failed[:20]:
        context.log.warning(f"no valid answer for {doc_id}: {reason}")
    if report.stopped:
        raise dg.Failure(description=f"stopped early: {report.stopped}")


@dg.asset(group_name="classification", deps=[classifications, prompt_signature, codebook], kinds={"duckdb"})
def classification_results(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.MaterializeResult:
    """Tables `classification_values` and `classification_documents` for the current (model,
    codebook), rebuilt from the ledger with display labels: no model call."""
    settings = adri.settings()
    warehouse = Warehouse(settings.warehouse)
    doc_ids = context.instance.get_dynamic_partitions(documents_partitions.name)
    documents = documents_for(warehouse, doc_ids)
    book = load_codebook(settings.codebook)
    backend = select_backend(settings)
    results = assemble_results(warehouse, documents, book, backend)
    store_results(warehouse, results, backend.model, book.content_hash)
    summary = summarize(results)
    by_variable = pl.DataFrame([{"variable": k, **v} for k, v in summary.get("evidence_pct_by_variable", {}).items()])
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content_hash(results.values)),
        metadata={
            "model": backend.model, "codebook_hash": book.content_hash, "codebook_version": book.version,
            "documents": summary["documents"], "pending": summary["pending"],
            "valid_first_try_pct": summary.get("valid_first_try_pct"),
            "literal_of_quoted_pct": summary.get("literal_of_quoted_pct"),
            "evidence_pct_by_variable": markdown_table(by_variable) if by_variable.height else "none",
        },
    )


@dg.asset(group_name="classification", deps=[classification_results], io_manager_key="content_hash_io_manager")
def evidence_audits(adri: AdriSettings) -> dg.Output:
    """Share of literal / approximate / absent / waived evidence per (model, codebook, variable)."""
    settings = adri.settings()
    book = load_codebook(settings.codebook)
    frame = Warehouse(settings.warehouse).query(
        """SELECT model, codebook_hash, variable, count(*) AS answers,
                  round(100 * avg((audit_status = 'literal')::INT), 1) AS literal_pct,
                  round(100 * avg((audit_status = 'approximate')::INT), 1) AS approximate_pct,
                  round(100 * avg((audit_status = 'absent')::INT), 1) AS absent_pct,
                  round(100 * avg((audit_status = 'waived')::INT), 1) AS waived_pct
           FROM classification_values WHERE codebook_hash = ? GROUP BY ALL ORDER BY ALL""",
        [book.content_hash])
    return versioned(frame, table=markdown_table(frame))


@dg.asset(group_name="classification", deps=[classification_results], io_manager_key="content_hash_io_manager")
def validation_agreement(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.Output:
    """Agreement and Cohen's kappa per (model, variable) against human coders (ADRI_CODERS)."""
    settings = adri.settings()
    book = load_codebook(settings.codebook)
    if settings.coders is None:
        context.log.info("no coder labels configured (ADRI_CODERS): agreement table left empty")
        empty = agreement_table(pl.DataFrame(schema={"model": pl.String, "doc_id": pl.String,
                                                     "variable": pl.String, "value": pl.String}),
                                pl.DataFrame(schema={"doc_id": pl.String, "variable": pl.String, "value": pl.String}))
        return versioned(empty, coders="none configured")
    results = Warehouse(settings.warehouse).query(
        "SELECT * FROM classification_values WHERE codebook_hash = ?", [book.content_hash])
    table = agreement_table(results, load_coder_labels(settings.coders, book))
    return versioned(table, coders=str(settings.coders), table=markdown_table(table))


@dg.asset_check(asset=classification_results, blocking=False)
def classification_quality(adri: AdriSettings) -> dg.AssetCheckResult:
    """Valid responses, literal evidence (overall and per variable) and corpus coverage against the
    thresholds in Settings; a failure names the documents and variables."""
    settings = adri.settings()
    warehouse = Warehouse(settings.warehouse)
    book = load_codebook(settings.codebook)
    values = warehouse.query("SELECT * FROM classification_values WHERE codebook_hash = ?", [book.content_hash])
    documents = warehouse.query("SELECT doc_id FROM documents")
    coverage = warehouse.query(
        "SELECT sum(included)::BIGINT AS inc, sum(rows)::BIGINT AS total FROM coverage").row(0, named=True)
    answered = set(values["doc_id"].unique().to_list())
    missing = [d for d in documents["doc_id"].to_list() if d not in answered]
    valid_pct = 100 * len(answered) / max(documents.height, 1)
    quoted = values.filter(pl.col("audit_status") != "waived")
    literal_pct = 100 * (quoted["audit_status"] == "literal").mean() if quoted.height else 100.0
    per_variable = {
        name: 100 * (group["audit_status"] == "literal").mean()
        for (name,), group in quoted.group_by("variable")
    }
    weak = {k: round(v, 1) for k, v in per_variable.items() if v < settings.check_min_literal_pct}
    coverage_pct = 100 * (coverage["inc"] or 0) / max(coverage["total"] or 0, 1)
    problems = []
    if valid_pct < settings.check_min_valid_pct:
        problems.append(f"valid {valid_pct:.1f} % < {settings.check_min_valid_pct}; without answer: {missing[:20]}")
    if literal_pct < settings.check_min_literal_pct or weak:
        problems.append(f"literal {literal_pct:.1f} %; variables below {settings.check_min_literal_pct}: {weak}")
    if coverage_pct < settings.check_min_coverage_pct:
        problems.append(f"coverage {coverage_pct:.1f} % < {settings.check_min_coverage_pct}")
    return dg.AssetCheckResult(
        passed=not problems,
        description="; ".join(problems) or "all thresholds met",
        metadata={"valid_pct": round(valid_pct, 1), "literal_pct": round(literal_pct, 1),
                  "coverage_pct": round(coverage_pct, 1), "documents_without_answer": len(missing)},
    )
