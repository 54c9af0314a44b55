"""The corpus a run reads: read back from the warehouse when every file is byte-identical to its last
load with the same options, else parsed (and validated) and stored — in the background, while the
first documents are already being classified (`CorpusReading`); and the corpus registered on its own
(the `corpus` asset, `adri register`)."""

from __future__ import annotations

import logging
import threading

import polars as pl

from adri_pipeline.classification.context import shared_ledger
from adri_pipeline.classification.corpus import (
    CHUNK_ROWS,
    Corpus,
    corpus_paths,
    fingerprints,
    read_corpus,
    reading_options,
)
from adri_pipeline.classification.ledger import Latch
from adri_pipeline.classification.shards import shard_of
from adri_pipeline.config import Settings
from adri_pipeline.warehouse import (
    Warehouse,
    corpus_files,
    store_corpus,
    stored_corpus,
)
from adri_pipeline.warehouse.corpus import DOCUMENT_SCHEMA

log = logging.getLogger(__name__)


def corpus_document_ids(settings: Settings, warehouse: Warehouse) -> list[str]:
    """Every document id of the configured corpus, in corpus order: what the new-documents sensor and
    `adri register` turn into shards."""
    corpus, _ = corpus_of_run(settings, warehouse)  # an unchanged file is not parsed
    return corpus.documents["doc_id"].to_list()


def corpus_of_run(settings: Settings, warehouse: Warehouse) -> tuple[Corpus, pl.DataFrame | None]:
    """The corpus as stored when each file is byte-identical to its last load with the same options:
    nothing to parse or store (None). Else the file parsed, with the fingerprints to store beside it.
    Parsing was most of a cached rerun of a large corpus (SCALING.md)."""
    prints = fingerprints(corpus_paths(settings.corpus), reading_options(settings))
    stored = stored_if_unchanged(settings, warehouse, prints)
    if stored is not None:
        return stored, None
    corpus = read_corpus(settings)
    return corpus, with_counts(prints, corpus)


def stored_if_unchanged(settings: Settings, warehouse: Warehouse, prints: pl.DataFrame) -> Corpus | None:
    sources = prints["source"].to_list()
    stored = corpus_files(warehouse, sources)
    if all(
        source in stored and {k: stored[source][k] for k in ("size", "sha256", "options")} == now
        for source, now in zip(sources, prints.select("size", "sha256", "options").iter_rows(named=True))
    ):
        documents, coverage = stored_corpus(warehouse, sources)
        if documents.height == sum(stored[source]["documents"] for source in sources):
            log.info(
                "%s: unchanged since it was stored, %d documents read from the warehouse",
                settings.corpus,
                documents.height,
            )
            return Corpus(documents.cast(DOCUMENT_SCHEMA), coverage)
    return None


def with_counts(prints: pl.DataFrame, corpus: Corpus) -> pl.DataFrame:
    counts = corpus.coverage.select("source", pl.col("included").cast(pl.Int64).alias("documents"))
    return prints.join(counts, on="source", how="left")


class CorpusReading(threading.Thread):
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
            self.replaced = store_corpus(
                self.warehouse, corpus, replace=self.replace, files=with_counts(self.prints, corpus)
            )
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
    corpus, files = corpus_of_run(settings, warehouse)
    if files is not None:
        store_corpus(warehouse, corpus, files=files)
    shared = shared_ledger(settings)
    if shared is not None and (files is not None or not shared.holds(corpus.documents["doc_id"].to_list())):
        shared.store_documents(corpus.documents, [shard_of(d) for d in corpus.documents["doc_id"]])
    return corpus
