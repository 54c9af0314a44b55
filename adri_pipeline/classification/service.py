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
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from adri_pipeline import faults
from adri_pipeline.classification.backends import select_backend
from adri_pipeline.classification.codebook import Codebook, load_codebook
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import (
    CHUNK_ROWS,
    Corpus,
    corpus_paths,
    fingerprints,
    read_corpus,
    reading_options,
)
from adri_pipeline.classification.ledger import LEDGER_COLUMNS, HeldLedger, Latch
from adri_pipeline.classification.prompt import Prompt
from adri_pipeline.classification.publishing import ModelIdentity, Publishing, figures_of
from adri_pipeline.classification.results import (
    ClassificationFigures,
    Results,
    summarize,
)
from adri_pipeline.classification.runner import RunReport, classify_corpus
from adri_pipeline.classification.shards import shard_of
from adri_pipeline.classification.summary import ClassificationSummary, summarize_run
from adri_pipeline.config import Settings
from adri_pipeline.errors import AdriError
from adri_pipeline.stopping import one_stop
from adri_pipeline.warehouse import (
    Warehouse,
    corpus_files,
    coverage_totals,
    last_run,
    read_documents,
    read_results,
    result_sets,
    store_codebook,
    store_corpus,
    stored_corpus,
)
from adri_pipeline.warehouse.corpus import DOCUMENT_SCHEMA
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


def corpus_document_ids(settings: Settings) -> list[str]:
    """Every document id of the configured corpus, in corpus order: what the new-documents sensor and
    `adri register` turn into shards."""
    corpus, _ = _corpus_of_run(settings, Warehouse(settings.warehouse))  # an unchanged file is not parsed
    return corpus.documents["doc_id"].to_list()


def recorded_model(warehouse: Warehouse, principal: str | None = None) -> ModelIdentity:
    """The model whose results the panel, checks and review show: the principal model when one is set
    (ADRI_PRINCIPAL_MODEL; ADR 0011 point 8: "o painel mostra o do modelo principal"), as its latest
    run recorded it; else the model the latest classification run resolved. Never chosen again."""
    run = last_run(warehouse, principal)
    if run is None and principal is not None:
        known = sorted({s["model"] for s in result_sets(warehouse)})
        raise NoClassificationRun(f"{warehouse.path}: no classification run of the principal model {principal!r} "
                                  f"(ADRI_PRINCIPAL_MODEL); models with results: {', '.join(known) or 'none'}")
    if run is None:
        raise NoClassificationRun(f"{warehouse.path}: no classification run recorded yet; classify first")
    return ModelIdentity(run["backend"], run["model"], run["model_digest"], json.loads(run["params"]))


def current_figures(warehouse: Warehouse, codebook: Codebook,
                    principal: str | None = None) -> tuple[ModelIdentity, ClassificationFigures]:
    """The recorded (or principal) model and its figures for this codebook."""
    model = recorded_model(warehouse, principal)
    return model, figures_of(warehouse, model, codebook)


@dataclass
class Quality:
    passed: bool
    description: str
    figures: dict


def check_quality(settings: Settings, model_name: str | None = None, codebook: Codebook | None = None) -> Quality:
    """Answered documents, literal evidence (overall and per variable) and corpus coverage of one
    model's results against the thresholds in Settings; a failure names documents and variables. The
    model: `model_name` (the one whose results an asset just built), else the recorded (principal) one;
    the codebook: the one given (an asset check's: what its upstream recorded), else the settings' file."""
    warehouse = Warehouse(settings.warehouse)
    codebook = codebook or load_codebook(settings.codebook)
    model = recorded_model(warehouse, model_name or settings.principal_model)
    values, documents, pending = read_results(warehouse, model.model, codebook.content_hash)
    figures = summarize(Results(values, documents, pending))  # the ADR's figures: one way to count literal
    answered = set(documents["doc_id"].to_list())
    doc_ids = read_documents(warehouse)["doc_id"].to_list()
    missing = [d for d in doc_ids if d not in answered]
    included, rows = coverage_totals(warehouse)
    valid_pct = 100 * len(answered) / max(len(doc_ids), 1)
    evidence = figures.evidence.literal_pct
    literal_pct = 100.0 if evidence is None else evidence  # nothing quoted: nothing to doubt
    weak = {name: shares.literal_pct for name, shares in figures.evidence_by_variable.items()
            if shares.literal_pct is not None and shares.literal_pct < settings.check_min_literal_pct}
    coverage_pct = 100 * included / max(rows, 1)
    problems = []
    if valid_pct < settings.check_min_valid_pct:
        problems.append(f"answered {valid_pct:.1f} % < {settings.check_min_valid_pct}; without answer: {missing[:20]}")
    if literal_pct < settings.check_min_literal_pct or weak:
        problems.append(f"literal {literal_pct:.1f} %; variables below {settings.check_min_literal_pct}: {weak}")
    if coverage_pct < settings.check_min_coverage_pct:
        problems.append(f"coverage {coverage_pct:.1f} % < {settings.check_min_coverage_pct}")
    return Quality(not problems, "; ".join(problems) or "all thresholds met",
                   {"model": model.model, "valid_pct": round(valid_pct, 1), "literal_pct": round(literal_pct, 1),
                    "coverage_pct": round(coverage_pct, 1), "documents_without_answer": len(missing)})


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
        return _classify_documents(context, documents, origin=origin, allow_fallback=allow_fallback, run_id=run_id,
                                   limit=limit, estimate=estimate, progress=progress, backend=backend, head=head)


def _classify_documents(context: RunContext, documents: pl.DataFrame, *, origin: str, allow_fallback: bool,
                        run_id: str | None, limit: int | None, estimate: bool, progress, backend,
                        head: RunReport | None) -> ClassificationRun:
    started_at, started = datetime.now(timezone.utc), time.perf_counter()
    settings, codebook, prompt = context.settings, context.codebook, context.prompt
    if backend is None:
        backend = resolve_backend(context, allow_fallback=allow_fallback)  # before anything is written
    model = ModelIdentity.of(backend)
    store_codebook(context.warehouse, codebook, prompt)
    shared = shared_ledger(settings)  # with ADRI_LEDGER_URL the answers go there, and are pulled in here
    run_id = run_id or uuid.uuid4().hex
    log.info("classification run %s: %s (digest %s), codebook %s%s", run_id[:8], model.model,
             model.digest[:19] or "-", codebook.content_hash[:12], f", shared ledger {shared.name}" if shared else "")
    publishing = Publishing(context, model, shared)

    def on_document(outcome, total):
        if progress:
            progress(outcome, total)
        publishing.answered(outcome)

    report = None
    with one_stop():  # a burst of Ctrl+C stops the run once; its results are written once
        try:
            if head is not None and head.stopped:
                report = head
            else:
                report = classify_corpus(documents, codebook, backend, shared or context.warehouse, limit=limit,
                                         estimate=estimate, concurrency=settings.concurrency, progress=on_document,
                                         on_start=publishing.before_any_call, prompt=prompt)
                if head is not None:
                    report.count_in(head)
        finally:
            faults.point("before_results")
            row = _RunRow(run_id, origin, started_at, model, codebook, prompt, report, publishing.touched)
            figures, snapshot = publishing.close(report, row)
    return ClassificationRun(run_id, model, codebook, report, figures, snapshot, time.perf_counter() - started,
                             publishing_seconds=publishing.checkpoints.spent)


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
        return _run_record(self.run_id, self.origin, self.started_at, self.model, self.codebook, self.prompt,
                           self.report, len(self.touched), figures)


def _run_record(run_id: str, origin: str, started_at: datetime, model: ModelIdentity, codebook: Codebook, prompt,
                report: RunReport | None, touched: int, figures: ClassificationFigures | None) -> dict:
    """The `classification_runs` row of a run, however it ended (no report: it raised)."""
    return {
        "run_id": run_id, "origin": origin, "started_at": started_at, "finished_at": datetime.now(timezone.utc),
        "backend": model.backend, "model": model.model, "model_digest": model.digest,
        "params": json.dumps(model.params, sort_keys=True), "codebook_hash": codebook.content_hash,
        "signature": prompt.signature, "selected": report.documents if report else None,
        "cached": report.cached if report else None, "classified": report.classified if report else touched,
        "failed": len(report.failed) if report else None, "model_calls": report.model_calls if report else None,
        "stopped": report.stopped if report else "error",
        "figures": figures.model_dump_json() if figures is not None else None,
    }


class NoSharedLedger(AdriError, ValueError):
    """A range run over the shared ledger was asked for with no ADRI_LEDGER_URL."""


def shared_ledger(settings: Settings) -> SharedLedger | None:
    """The PostgreSQL ledger many runs commit to (ADRI_LEDGER_URL), or None: the warehouse's own."""
    return SharedLedger(settings.ledger_url) if settings.ledger_url else None


def classify_shards(context: RunContext, shards: list[str], *, origin: str, run_id: str | None = None,
                    progress=None, backend=None) -> RunReport:
    """One run of a range over the shared ledger: the shards' documents read from PostgreSQL, what the
    ledger lacks classified and committed there, the run and its failures recorded there. It never
    opens the DuckDB warehouse, so runs side by side (and on other machines) never wait for one
    another; the results are built once after them (`pull_shared_ledger`, then `refresh_results`)."""
    settings, codebook, prompt = context.settings, context.codebook, context.prompt
    shared = shared_ledger(settings)
    if shared is None:
        raise NoSharedLedger("a range run over shards needs the shared ledger: set ADRI_LEDGER_URL "
                             "(postgresql://user@host:5432/db)")
    started_at = datetime.now(timezone.utc)
    if backend is None:
        backend = resolve_backend(context, allow_fallback=False)
    model = ModelIdentity.of(backend)
    documents = shared.documents_of_shards(shards)
    run_id = run_id or uuid.uuid4().hex
    log.info("classification run %s over %d shard(s), %d documents: %s, shared ledger %s", run_id[:8],
             len(shards), documents.height, model.model, shared.name)
    report = None
    with one_stop():
        try:
            report = classify_corpus(documents, codebook, backend, shared, concurrency=settings.concurrency,
                                     progress=progress, prompt=prompt)
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


def _corpus_of_run(settings: Settings, warehouse: Warehouse) -> tuple[Corpus, pl.DataFrame | None]:
    """The corpus as stored when each file is byte-identical to its last load with the same options:
    nothing to parse or store (None). Else the file parsed, with the fingerprints to store beside it.
    Parsing was most of a cached rerun of a large corpus (SCALING.md)."""
    prints = fingerprints(corpus_paths(settings.corpus), reading_options(settings))
    stored = _stored_if_unchanged(settings, warehouse, prints)
    if stored is not None:
        return stored, None
    corpus = read_corpus(settings)
    return corpus, _with_counts(prints, corpus)


def _stored_if_unchanged(settings: Settings, warehouse: Warehouse, prints: pl.DataFrame) -> Corpus | None:
    sources = prints["source"].to_list()
    stored = corpus_files(warehouse, sources)
    if all(source in stored and {k: stored[source][k] for k in ("size", "sha256", "options")} == now
           for source, now in zip(sources, prints.select("size", "sha256", "options").iter_rows(named=True))):
        documents, coverage = stored_corpus(warehouse, sources)
        if documents.height == sum(stored[source]["documents"] for source in sources):
            log.info("%s: unchanged since it was stored, %d documents read from the warehouse",
                     settings.corpus, documents.height)
            return Corpus(documents.cast(DOCUMENT_SCHEMA), coverage)
    return None


def _with_counts(prints: pl.DataFrame, corpus: Corpus) -> pl.DataFrame:
    counts = corpus.coverage.select("source", pl.col("included").cast(pl.Int64).alias("documents"))
    return prints.join(counts, on="source", how="left")


class _CorpusReading(threading.Thread):
    """A changed corpus file read (so validated) and stored in the background while the first
    documents are classified: the first CHUNK_ROWS documents are handed over as soon as they are read,
    and the gate opens once the whole file is stored — or with the error that stopped it (a bad line,
    a clash), in which case nothing was stored."""

    def __init__(self, settings: Settings, warehouse: Warehouse, prints: pl.DataFrame, replace: bool):
        super().__init__(name="corpus-reading", daemon=True)
        self.settings, self.warehouse, self.prints, self.replace = settings, warehouse, prints, replace
        self.gate, self.head_ready, self.first_request_out = Latch(), threading.Event(), threading.Event()
        self.head: pl.DataFrame | None = None
        self.corpus: Corpus | None = None
        self.replaced: list[str] = []
        # the corpus is stored only once the model is known to answer: a missing server stores nothing
        self.may_store, self.cancelled = threading.Event(), False

    def _first_chunk(self, frame: pl.DataFrame) -> None:
        if self.head is None and frame.height == CHUNK_ROWS:  # a smaller file is read whole at once
            self.head = frame
            self.head_ready.set()
            # Python runs one thread at a time: parsing on while the run gets its first request out
            # would halve the run's pace until then (1.7 s to the first request at 100,000 documents)
            self.first_request_out.wait(timeout=5)

    def hand_over(self) -> bool:
        """The run's question before each document it starts: stop once the file is read and stored."""
        self.first_request_out.set()
        return self.gate.is_open()

    def run(self) -> None:
        error = None
        try:
            corpus = read_corpus(self.settings, on_chunk=self._first_chunk)
            self.may_store.wait()
            if self.cancelled:
                return
            self.replaced = store_corpus(self.warehouse, corpus, replace=self.replace,
                                         files=_with_counts(self.prints, corpus))
            self.corpus = corpus
        except BaseException as exc:  # handed to the run at its next commit, and raised there
            error = exc
        finally:
            self.gate.open(error)
            self.head_ready.set()

    def result(self) -> Corpus:
        self.join()
        self.gate.wait()
        return self.corpus

    def cancel(self) -> None:
        """Nothing more is stored (if the corpus was not stored yet, it never is); waits for the thread,
        so no write is cut off at exit."""
        self.cancelled = True
        self.first_request_out.set()
        self.may_store.set()
        self.join()


def register_corpus(settings: Settings, warehouse: Warehouse) -> Corpus:
    """The configured corpus, stored (the `corpus` asset): parsed and stored only when a file changed,
    in the warehouse and, when configured, in the shared ledger's documents the range runs read."""
    corpus, files = _corpus_of_run(settings, warehouse)
    if files is not None:
        store_corpus(warehouse, corpus, files=files)
    shared = shared_ledger(settings)
    if shared is not None and (files is not None or not shared.holds(corpus.documents["doc_id"].to_list())):
        shared.store_documents(corpus.documents, [shard_of(d) for d in corpus.documents["doc_id"]])
    return corpus


def classify_and_summarize(settings: Settings, *, limit: int | None = None, estimate: bool = False,
                           replace_documents: bool = False, progress=None) -> ClassificationSummary:
    """`adri classify`: the corpus file classified (classify_corpus_file) and what the run did."""
    run, corpus = classify_corpus_file(settings, limit=limit, estimate=estimate, progress=progress,
                                       replace_documents=replace_documents)
    return summarize_run(run, corpus, str(settings.warehouse), estimate)


def classify_corpus_file(settings: Settings, *, origin: str = "cli", limit: int | None = None,
                         estimate: bool = False, replace_documents: bool = False,
                         progress=None) -> tuple[ClassificationRun, Corpus]:
    """The CLI's path: load the corpus file, classify it, results accumulate with earlier corpora.
    `auto` may fall back to the embedded model here: a person is watching, and is told loudly.
    A changed file is read in the background while its first documents are classified (the first
    request does not wait for 100,000 documents to be parsed and stored); their answers are held
    until the whole file is read and stored, so a bad line still leaves everything stored as it was."""
    context = RunContext.load(settings)  # a bad codebook fails before anything is written
    with context.warehouse.running("classification"):  # a second run refuses before any request
        return _classify_corpus_file(context, origin=origin, limit=limit, estimate=estimate,
                                     replace_documents=replace_documents, progress=progress)


def _classify_corpus_file(context: RunContext, *, origin: str, limit: int | None, estimate: bool,
                          replace_documents: bool, progress) -> tuple[ClassificationRun, Corpus]:
    settings, warehouse = context.settings, context.warehouse
    prints = fingerprints(corpus_paths(settings.corpus), reading_options(settings))
    corpus = _stored_if_unchanged(settings, warehouse, prints)
    if corpus is not None or limit is not None or estimate:
        return _classify_read_corpus(context, corpus, prints, origin=origin, limit=limit,
                                     estimate=estimate, replace_documents=replace_documents, progress=progress)
    # created here, not by two threads at once, and held open: the run's many short connections then
    # find the database open instead of opening the file each time (0.4 s before the first request)
    shared = shared_ledger(settings)
    with one_stop(), warehouse.connect():  # one stop for the first documents, the rest and the closing
        reading = _CorpusReading(settings, warehouse, prints, replace_documents)
        reading.start()
        head, done_first = None, [0]

        def first_progress(outcome, total):
            done_first[0] += 1
            if progress:
                progress(outcome, total)
        try:
            backend = resolve_backend(context, allow_fallback=True)  # while the first documents are read
            reading.may_store.set()
            reading.head_ready.wait()
            try:
                if reading.head is not None:  # else a small file, read whole already (or failed)
                    head = classify_corpus(reading.head, context.codebook, backend,
                                           HeldLedger(shared or warehouse, reading.gate),
                                           concurrency=settings.concurrency, progress=first_progress,
                                           keep_backend=True, hand_over=reading.hand_over, prompt=context.prompt)
                reading.first_request_out.set()  # all of the first documents cached: nothing was asked
                corpus = reading.result()
            except BaseException:
                backend.close()
                raise
        except BaseException:
            reading.cancel()
            raise
        for note in corpus.notes:
            log.warning(note)
        for doc_id in reading.replaced:
            log.warning("document %s: stored title/abstract replaced from %s", doc_id, settings.corpus)
        rest_progress = None if progress is None else (lambda outcome, total: progress(outcome, total + done_first[0]))
        run = classify_documents(context, corpus.documents, origin=origin, progress=rest_progress, backend=backend,
                                 head=head)
        run.replaced_documents = reading.replaced
        return run, corpus


def _classify_read_corpus(context: RunContext, corpus: Corpus | None, prints: pl.DataFrame,
                          *, origin: str, limit: int | None, estimate: bool, replace_documents: bool,
                          progress) -> tuple[ClassificationRun, Corpus]:
    """The file read whole first (or unchanged and read back from the warehouse), then classified."""
    settings, warehouse = context.settings, context.warehouse
    files = None
    if corpus is None:
        corpus = read_corpus(settings)
        files = _with_counts(prints, corpus)
    for note in corpus.notes:
        log.warning(note)
    backend = resolve_backend(context, allow_fallback=True)  # a missing server fails before anything is stored
    replaced = [] if files is None else store_corpus(warehouse, corpus, replace=replace_documents, files=files)
    for doc_id in replaced:
        log.warning("document %s: stored title/abstract replaced from %s", doc_id, settings.corpus)
    run = classify_documents(context, corpus.documents, origin=origin, limit=limit, estimate=estimate,
                             progress=progress, backend=backend)
    run.replaced_documents = replaced
    return run, corpus
