"""The classification operations users run, called alike by the CLI, the Dagster assets and the demo.

A run resolves its backend once, before anything is written, and records it (`classification_runs`);
downstream steps read that record instead of choosing again. Results accumulate per (model, codebook):
a run replaces the rows of the documents it touched, never others. During a long run the results and
the analyst snapshot are republished every N documents or M minutes, and once more however the run
ends (ADR 0011: "a primeira regravação parcial mostrou 256 (206 + 50 novos)").
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from adri_pipeline import faults
from adri_pipeline.classification.backends import select_backend
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.context import RunContext, shared_ledger
from adri_pipeline.classification.corpus import (
    Corpus,
    corpus_paths,
    fingerprints,
    read_corpus,
    reading_options,
)
from adri_pipeline.classification.corpus_reading import CorpusReading, stored_if_unchanged, with_counts
from adri_pipeline.classification.ledger import LEDGER_COLUMNS, HeldLedger
from adri_pipeline.classification.prompt import Prompt
from adri_pipeline.classification.publishing import ModelIdentity, Publishing, figures_of
from adri_pipeline.classification.results import (
    ClassificationFigures,
    Results,
    summarize,
)
from adri_pipeline.classification.runner import RunReport, classify_corpus
from adri_pipeline.classification.summary import ClassificationSummary, summarize_run
from adri_pipeline.config import Settings
from adri_pipeline.errors import AdriError
from adri_pipeline.stopping import one_stop
from adri_pipeline.warehouse import (
    Warehouse,
    coverage_totals,
    last_run,
    read_documents,
    read_results,
    result_sets,
    store_codebook,
    store_corpus,
)
from adri_pipeline.warehouse.shared import SharedLedger

log = logging.getLogger(__name__)


class NoClassificationRun(AdriError, RuntimeError):
    """Results were asked for before any classification run recorded its model."""


@dataclass
class ClassificationRun:
    run_id: str
    model: ModelIdentity
    codebook: Codebook
    report: RunReport
    figures: ClassificationFigures
    snapshot: Path
    wall_seconds: float
    publishing_seconds: float = 0.0  # rebuilding results and republishing the snapshot, during and after
    replaced_documents: list[str] = field(default_factory=list)


def _embedded_backend(context: RunContext):
    """Imported when chosen: scikit-learn and the encoder stay out of a served model's start-up."""
    from adri_pipeline.classification.coders import embedded_backend

    return embedded_backend(context)


def resolve_backend(context: RunContext, allow_fallback: bool = False):
    """The backend a run uses, chosen once; the embedded one is trained on the coder file when one is
    configured (ADRI_CODERS), else zero-shot."""
    return select_backend(context.settings, allow_fallback=allow_fallback, embedded=lambda: _embedded_backend(context))


def recorded_model(warehouse: Warehouse, principal: str | None = None) -> ModelIdentity:
    """The model whose results the panel, checks and review show: the principal model when one is set
    (ADRI_PRINCIPAL_MODEL; ADR 0011 point 8: "o painel mostra o do modelo principal"), as its latest
    run recorded it; else the model the latest classification run resolved. Never chosen again."""
    run = last_run(warehouse, principal)
    if run is None and principal is not None:
        known = sorted({s["model"] for s in result_sets(warehouse)})
        raise NoClassificationRun(
            f"{warehouse.path}: no classification run of the principal model {principal!r} "
            f"(ADRI_PRINCIPAL_MODEL); models with results: {', '.join(known) or 'none'}"
        )
    if run is None:
        raise NoClassificationRun(f"{warehouse.path}: no classification run recorded yet; classify first")
    return ModelIdentity(run["backend"], run["model"], run["model_digest"], json.loads(run["params"]))


def current_figures(
    warehouse: Warehouse, codebook: Codebook, principal: str | None = None
) -> tuple[ModelIdentity, ClassificationFigures]:
    """The recorded (or principal) model and its figures for this codebook."""
    model = recorded_model(warehouse, principal)
    return model, figures_of(warehouse, model, codebook)


@dataclass
class Quality:
    passed: bool
    description: str
    figures: dict


def check_quality(context: RunContext, model_name: str | None = None) -> Quality:
    """Answered documents, literal evidence (overall and per variable) and corpus coverage of one
    model's results against the thresholds in Settings; a failure names documents and variables. The
    model: `model_name` (the one whose results an asset just built), else the recorded (principal) one;
    the codebook: the context's (an asset check's: what its upstream recorded)."""
    settings, warehouse, codebook = context.settings, context.warehouse, context.codebook
    model = recorded_model(warehouse, model_name or settings.principal_model)
    values, documents, pending = read_results(warehouse, model.model, codebook.content_hash)
    figures = summarize(Results(values, documents, pending))  # the ADR's figures: one way to count literal
    answered = set(documents["doc_id"].to_list())
    doc_ids = read_documents(warehouse)["doc_id"].to_list()
    missing = [d for d in doc_ids if d not in answered]
    included, rows = coverage_totals(warehouse)
    # the thresholds are percentages (ADRI_CHECK_MIN_*_PCT): the shares are compared as percentages
    valid_pct = 100 * len(answered) / max(len(doc_ids), 1)
    evidence = figures.evidence.literal_share
    literal_pct = 100.0 if evidence is None else 100 * evidence  # nothing quoted: nothing to doubt
    weak = {
        name: round(100 * shares.literal_share, 1)
        for name, shares in figures.evidence_by_variable.items()
        if shares.literal_share is not None and 100 * shares.literal_share < settings.check_min_literal_pct
    }
    coverage_pct = 100 * included / max(rows, 1)
    problems = []
    if valid_pct < settings.check_min_valid_pct:
        problems.append(f"answered {valid_pct:.1f} % < {settings.check_min_valid_pct}; without answer: {missing[:20]}")
    if literal_pct < settings.check_min_literal_pct or weak:
        problems.append(f"literal {literal_pct:.1f} %; variables below {settings.check_min_literal_pct}: {weak}")
    if coverage_pct < settings.check_min_coverage_pct:
        problems.append(f"coverage {coverage_pct:.1f} % < {settings.check_min_coverage_pct}")
    return Quality(
        not problems,
        "; ".join(problems) or "all thresholds met",
        {
            "model": model.model,
            "valid_pct": round(valid_pct, 1),
            "literal_pct": round(literal_pct, 1),
            "coverage_pct": round(coverage_pct, 1),
            "documents_without_answer": len(missing),
        },
    )


def classify_documents(
    context: RunContext,
    documents: pl.DataFrame,
    *,
    origin: str,
    allow_fallback: bool = False,
    run_id: str | None = None,
    limit: int | None = None,
    estimate: bool = False,
    progress=None,
    backend=None,
    head: RunReport | None = None,
) -> ClassificationRun:
    """Classify what the ledger lacks among `documents` (already stored in the warehouse); results,
    figures, failures and the snapshot are written for what was done however the run ends (a stop,
    an interrupt, an error). With the shared ledger (ADRI_LEDGER_URL) the answers, failures and the
    run's row are committed there, and pulled into the warehouse before each results rebuild. `head`
    is what the same run did on the file's first documents while the file was being read
    (classify_corpus_file): counted in, and a stop there is this run's stop."""
    with context.warehouse.running("classification"):  # a second run refuses before any request
        return _classify_documents(
            context,
            documents,
            origin=origin,
            allow_fallback=allow_fallback,
            run_id=run_id,
            limit=limit,
            estimate=estimate,
            progress=progress,
            backend=backend,
            head=head,
        )


def _classify_documents(
    context: RunContext,
    documents: pl.DataFrame,
    *,
    origin: str,
    allow_fallback: bool,
    run_id: str | None,
    limit: int | None,
    estimate: bool,
    progress,
    backend,
    head: RunReport | None,
) -> ClassificationRun:
    started_at, started = datetime.now(timezone.utc), time.perf_counter()
    codebook, prompt = context.codebook, context.prompt
    if backend is None:
        backend = resolve_backend(context, allow_fallback=allow_fallback)  # before anything is written
    model, shared, run_id = _open_run(context, backend, run_id)
    publishing = Publishing(context, model, shared)
    report = None
    with one_stop():  # a burst of Ctrl+C stops the run once; its results are written once
        try:
            if head is not None and head.stopped:
                report = head
            else:
                report = _publishing_as_it_goes(
                    context, documents, backend, shared, publishing, progress, limit, estimate
                )
                if head is not None:
                    report.count_in(head)
        finally:
            faults.point("before_results")
            row = _RunRow(run_id, origin, started_at, model, codebook, prompt, report, publishing.touched)
            figures, snapshot = publishing.close(report, row)
    return ClassificationRun(
        run_id,
        model,
        codebook,
        report,
        figures,
        snapshot,
        time.perf_counter() - started,
        publishing_seconds=publishing.checkpoints.spent,
    )


def _open_run(context: RunContext, backend, run_id: str | None) -> tuple[ModelIdentity, SharedLedger | None, str]:
    """What a run records before its first request: the codebook and prompt it classifies with, and a log
    line naming the run, the model and where its answers go (the shared ledger, with ADRI_LEDGER_URL,
    whence they are pulled in here). The model's identity, the shared ledger (or None) and the run's id."""
    codebook = context.codebook
    model = ModelIdentity.of(backend)
    store_codebook(context.warehouse, codebook, context.prompt)
    shared = context.shared
    run_id = run_id or uuid.uuid4().hex
    log.info(
        "classification run %s: %s (digest %s), codebook %s%s",
        run_id[:8],
        model.model,
        model.digest[:19] or "-",
        codebook.content_hash[:12],
        f", shared ledger {shared.name}" if shared else "",
    )
    return model, shared, run_id


def _publishing_as_it_goes(
    context: RunContext,
    documents: pl.DataFrame,
    backend,
    shared: SharedLedger | None,
    publishing: Publishing,
    progress,
    limit: int | None,
    estimate: bool,
) -> RunReport:
    """classify_corpus over the ledger (the shared one, with ADRI_LEDGER_URL): each answer published as
    it comes, and what the ledger already holds published before any model call."""

    def on_document(outcome, total):
        if progress:
            progress(outcome, total)
        publishing.answered(outcome)

    return classify_corpus(
        documents,
        context.codebook,
        backend,
        shared or context.warehouse,
        limit=limit,
        estimate=estimate,
        concurrency=context.settings.concurrency,
        progress=on_document,
        on_start=publishing.before_any_call,
        prompt=context.prompt,
    )


@dataclass
class _RunRow:
    run_id: str
    origin: str
    started_at: datetime
    model: ModelIdentity
    codebook: Codebook
    prompt: Prompt
    report: RunReport | None
    touched: list[str]

    def __call__(self, figures: ClassificationFigures | None) -> dict:
        return _run_record(
            self.run_id,
            self.origin,
            self.started_at,
            self.model,
            self.codebook,
            self.prompt,
            self.report,
            len(self.touched),
            figures,
        )


def _run_record(
    run_id: str,
    origin: str,
    started_at: datetime,
    model: ModelIdentity,
    codebook: Codebook,
    prompt,
    report: RunReport | None,
    touched: int,
    figures: ClassificationFigures | None,
) -> dict:
    """The `classification_runs` row of a run, however it ended (no report: it raised)."""
    return {
        "run_id": run_id,
        "origin": origin,
        "started_at": started_at,
        "finished_at": datetime.now(timezone.utc),
        "backend": model.backend,
        "model": model.model,
        "model_digest": model.digest,
        "params": json.dumps(model.params, sort_keys=True),
        "codebook_hash": codebook.content_hash,
        "signature": prompt.signature,
        "selected": report.documents if report else None,
        "cached": report.cached if report else None,
        "classified": report.classified if report else touched,
        "failed": len(report.failed) if report else None,
        "model_calls": report.model_calls if report else None,
        "stopped": report.stopped if report else "error",
        "figures": figures.model_dump_json() if figures is not None else None,
    }


class NoSharedLedger(AdriError, ValueError):
    """A range run over the shared ledger was asked for with no ADRI_LEDGER_URL."""


def classify_shards(
    context: RunContext, shards: list[str], *, origin: str, run_id: str | None = None, progress=None, backend=None
) -> RunReport:
    """One run of a range over the shared ledger: the shards' documents read from PostgreSQL, what the
    ledger lacks classified and committed there, the run and its failures recorded there. It never
    opens the DuckDB warehouse, so runs side by side (and on other machines) never wait for one
    another; the results are built once after them (`pull_shared_ledger`, then `refresh_results`)."""
    settings, codebook, prompt, shared = context.settings, context.codebook, context.prompt, context.shared
    if shared is None:
        raise NoSharedLedger(
            "a range run over shards needs the shared ledger: set ADRI_LEDGER_URL (postgresql://user@host:5432/db)"
        )
    started_at = datetime.now(timezone.utc)
    if backend is None:
        backend = resolve_backend(context, allow_fallback=False)
    model = ModelIdentity.of(backend)
    documents = shared.documents_of_shards(shards)
    run_id = run_id or uuid.uuid4().hex
    log.info(
        "classification run %s over %d shard(s), %d documents: %s, shared ledger %s",
        run_id[:8],
        len(shards),
        documents.height,
        model.model,
        shared.name,
    )
    report = None
    with one_stop():
        try:
            report = classify_corpus(
                documents, codebook, backend, shared, concurrency=settings.concurrency, progress=progress, prompt=prompt
            )
        finally:
            if report is not None:
                shared.store_failures(report.answered, report.failed, model.model, prompt.signature, run_id)
            shared.record_run(_run_record(run_id, origin, started_at, model, codebook, prompt, report, 0, None))
    return report


def pull_shared_ledger(settings: Settings, warehouse: Warehouse) -> list[str] | None:
    """What the shared ledger holds that the warehouse lacks, copied in (the doc ids pulled); None when
    no shared ledger is configured."""
    shared = shared_ledger(settings)
    return None if shared is None else shared.pull_into(warehouse, list(LEDGER_COLUMNS))


def classify_and_summarize(
    settings: Settings,
    *,
    limit: int | None = None,
    estimate: bool = False,
    replace_documents: bool = False,
    progress=None,
    committed=None,
) -> ClassificationSummary:
    """`adri classify`: the corpus file classified (classify_corpus_file) and what the run did.
    `committed(run)` is called once the run's answers, results and snapshot are written (the command
    line reports the run to a Dagster instance there)."""
    run, corpus = classify_corpus_file(
        settings, limit=limit, estimate=estimate, progress=progress, replace_documents=replace_documents
    )
    if committed is not None:
        committed(run)
    return summarize_run(run, corpus, str(settings.warehouse), estimate)


def classify_corpus_file(
    settings: Settings,
    *,
    origin: str = "cli",
    limit: int | None = None,
    estimate: bool = False,
    replace_documents: bool = False,
    progress=None,
) -> tuple[ClassificationRun, Corpus]:
    """The CLI's path: load the corpus file, classify it, results accumulate with earlier corpora.
    `auto` may fall back to the embedded model here: a person is watching, and is told loudly.
    A changed file is read in the background while its first documents are classified (the first
    request does not wait for 100,000 documents to be parsed and stored); their answers are held
    until the whole file is read and stored, so a bad line still leaves everything stored as it was."""
    context = RunContext.load(settings)  # a bad codebook fails before anything is written
    with context.warehouse.running("classification"):  # a second run refuses before any request
        return _classify_corpus_file(
            context,
            origin=origin,
            limit=limit,
            estimate=estimate,
            replace_documents=replace_documents,
            progress=progress,
        )


def _classify_corpus_file(
    context: RunContext, *, origin: str, limit: int | None, estimate: bool, replace_documents: bool, progress
) -> tuple[ClassificationRun, Corpus]:
    settings, warehouse = context.settings, context.warehouse
    prints = fingerprints(corpus_paths(settings.corpus), reading_options(settings))
    corpus = stored_if_unchanged(settings, warehouse, prints)
    if corpus is not None or limit is not None or estimate:
        return _classify_read_corpus(
            context,
            corpus,
            prints,
            origin=origin,
            limit=limit,
            estimate=estimate,
            replace_documents=replace_documents,
            progress=progress,
        )
    # the warehouse created here, not by two threads at once, and held open: the run's many short
    # connections then find the database open instead of opening the file each time (0.4 s before the
    # first request); the first documents and the rest commit to the context's one shared ledger
    shared = context.shared
    with one_stop(), warehouse.connect():  # one stop for the first documents, the rest and the closing
        reading = CorpusReading(settings, warehouse, prints, replace_documents)
        reading.start()
        done_first = [0]

        def first_progress(outcome, total):
            done_first[0] += 1
            if progress:
                progress(outcome, total)

        backend, head, corpus = _classify_while_reading(context, reading, shared, first_progress)
        for note in corpus.notes:
            log.warning(note)
        for doc_id in reading.replaced:
            log.warning("document %s: stored title/abstract replaced from %s", doc_id, settings.corpus)
        rest_progress = None if progress is None else (lambda outcome, total: progress(outcome, total + done_first[0]))
        run = classify_documents(
            context, corpus.documents, origin=origin, progress=rest_progress, backend=backend, head=head
        )
        run.replaced_documents = reading.replaced
        return run, corpus


def _classify_while_reading(
    context: RunContext, reading: CorpusReading, shared: SharedLedger | None, first_progress
) -> tuple:
    """The file's first documents classified while the rest is read, their answers held until the whole
    file is stored; the backend is resolved meanwhile and kept open for the rest. On any failure the
    reading is cancelled and the backend closed, so nothing is left running. (backend, the first
    documents' report or None for a file small enough to be read whole, the corpus)."""
    head = None
    try:
        backend = resolve_backend(context, allow_fallback=True)  # while the first documents are read
        reading.may_store.set()
        reading.head_ready.wait()
        try:
            if reading.head is not None:  # else a small file, read whole already (or failed)
                head = classify_corpus(
                    reading.head,
                    context.codebook,
                    backend,
                    HeldLedger(shared or context.warehouse, reading.gate),
                    concurrency=context.settings.concurrency,
                    progress=first_progress,
                    keep_backend=True,
                    hand_over=reading.hand_over,
                    prompt=context.prompt,
                )
            reading.first_request_out.set()  # all of the first documents cached: nothing was asked
            corpus = reading.result()
        except BaseException:
            backend.close()
            raise
    except BaseException:
        reading.cancel()
        raise
    return backend, head, corpus


def _classify_read_corpus(
    context: RunContext,
    corpus: Corpus | None,
    prints: pl.DataFrame,
    *,
    origin: str,
    limit: int | None,
    estimate: bool,
    replace_documents: bool,
    progress,
) -> tuple[ClassificationRun, Corpus]:
    """The file read whole first (or unchanged and read back from the warehouse), then classified."""
    settings, warehouse = context.settings, context.warehouse
    files = None
    if corpus is None:
        corpus = read_corpus(settings)
        files = with_counts(prints, corpus)
    for note in corpus.notes:
        log.warning(note)
    backend = resolve_backend(context, allow_fallback=True)  # a missing server fails before anything is stored
    replaced = [] if files is None else store_corpus(warehouse, corpus, replace=replace_documents, files=files)
    for doc_id in replaced:
        log.warning("document %s: stored title/abstract replaced from %s", doc_id, settings.corpus)
    run = classify_documents(
        context, corpus.documents, origin=origin, limit=limit, estimate=estimate, progress=progress, backend=backend
    )
    run.replaced_documents = replaced
    return run, corpus
