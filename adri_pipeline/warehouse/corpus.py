"""The documents and the files they came from."""

from __future__ import annotations

import polars as pl

from adri_pipeline.errors import AdriError
from adri_pipeline.warehouse.connection import Warehouse, sql, transaction


class DocumentClash(AdriError, ValueError):
    """A document id already stored with another title or abstract, from another file."""


STORE_SLICE_ROWS = 10_000

# a corpus's documents as the warehouse stores them (migrations/0001, 0004), the columns every reader
# of a corpus file produces (classification/corpus.py)
DOCUMENT_SCHEMA = {
    "doc_id": pl.String,
    "title": pl.String,
    "abstract": pl.String,  # original, offsets point here
    "text": pl.String,  # cleaned, what the model reads
    "text_language": pl.String,
    "year": pl.Int32,
    "doi": pl.String,
    "source": pl.String,
    "line": pl.Int64,
}


def store_corpus(warehouse: Warehouse, corpus, replace: bool = False, files: pl.DataFrame | None = None) -> list[str]:
    """Documents are upserted by doc_id; coverage is replaced per source file; `files` (the files'
    fingerprints, see corpus_files) recorded with them. An id already stored with a different text stops
    the load naming both files, unless `replace`; returns what was replaced."""
    with warehouse.connect() as con:
        con.register("_incoming", corpus.documents)
        clashes = con.execute(sql("document_clashes")).fetchall()
        con.unregister("_incoming")
        if clashes and not replace:
            doc_id, old_source, old_line, new_source, new_line = clashes[0]
            raise DocumentClash(
                f"{new_source}: line {new_line}: document id {doc_id!r} is already stored from {old_source} "
                f"line {old_line} with a different title or abstract ({len(clashes)} such id(s)); "
                "rename the ids, or pass --replace-documents to overwrite the stored text"
            )
        # a statement's rows stay in DuckDB's memory until it commits: 100,000 documents at once took
        # the process to 2.7 GB; slices keep it near 1.5 GB. The files' fingerprints go last, so a run
        # killed midway parses and stores the corpus again.
        for part in corpus.documents.iter_slices(STORE_SLICE_ROWS):
            warehouse.upsert(con, "documents", part)
        with transaction(con):
            warehouse.upsert(con, "coverage", corpus.coverage)
            if clashes:  # the files whose ids were taken over no longer read back whole
                con.execute(sql("corpus_files_forget"), {"sources": sorted({row[1] for row in clashes})})
            if files is not None:
                warehouse.upsert(con, "corpus_files", files)
    return [row[0] for row in clashes]


def corpus_files(warehouse: Warehouse, sources: list[str]) -> dict[str, dict]:
    """The stored fingerprint (size, sha256, options, documents) of each of `sources` that has one."""
    if not warehouse.path.exists():
        return {}
    rows = warehouse.query(sql("corpus_files"), {"sources": sources})
    return {row["source"]: row for row in rows.iter_rows(named=True)}


def stored_corpus(warehouse: Warehouse, sources: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(documents, coverage) of the given files as stored, in the order loading them gives."""
    return (
        warehouse.query(sql("documents_of_sources"), {"sources": sources}),
        warehouse.query(sql("coverage_of_sources"), {"sources": sources}),
    )


def read_documents(warehouse: Warehouse, doc_ids: list[str] | None = None) -> pl.DataFrame:
    """Stored documents, all of them or the given ids in their order (unknown ids left out)."""
    if doc_ids is None:
        return warehouse.query(sql("documents"))
    frame = warehouse.query(sql("documents_by_id"), {"doc_ids": doc_ids})
    order = pl.DataFrame(
        {"doc_id": doc_ids, "_order": range(len(doc_ids))}, schema={"doc_id": pl.String, "_order": pl.Int64}
    )
    return frame.join(order, on="doc_id").sort("_order").drop("_order")


def coverage_totals(warehouse: Warehouse) -> tuple[int, int]:
    """(documents included, rows read) over every corpus file loaded."""
    row = warehouse.query(sql("coverage_totals")).row(0)
    return int(row[0]), int(row[1])
