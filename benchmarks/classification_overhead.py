"""Pipeline overhead per document, cache-hit rerun time and audit throughput.

Runs the real `ollama` client against the loopback test server at zero model latency, so what is
measured is our loop (HTTP, validation, audit, ledger commit) and not a model. Prints medians of
repeated runs and ratios measured side by side in this one process.

    .venv/bin/python benchmarks/classification_overhead.py [N_DOCUMENTS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.classification.audit import DocumentIndex, TextIndex, audit_evidence  # noqa: E402
from adri_pipeline.classification.backends.served import ServedBackend  # noqa: E402
from adri_pipeline.classification.codebook import load_codebook  # noqa: E402
from adri_pipeline.classification.corpus import load_corpus  # noqa: E402
from adri_pipeline.classification.results import assemble_results  # noqa: E402
from adri_pipeline.classification.runner import classify_corpus  # noqa: E402
from adri_pipeline.config import PILOT_CODEBOOK, SAMPLE_CORPUS  # noqa: E402
from adri_pipeline.warehouse import Warehouse  # noqa: E402
from loopback.fakes import answer_from_request  # noqa: E402
from loopback.model_server import ModelServerStub  # noqa: E402


def corpus_of(n: int) -> pl.DataFrame:
    """n distinct documents made from the sample (distinct text -> distinct cache keys)."""
    base = load_corpus(SAMPLE_CORPUS).documents
    copies = (n + base.height - 1) // base.height
    frame = pl.concat(
        [
            base.with_columns(
                (pl.col("doc_id") + f"-{i}").alias("doc_id"),
                (pl.col("text") + f" (cópia {i})").alias("text"),
                (pl.col("abstract") + f" (cópia {i})").alias("abstract"),
            )
            for i in range(copies)
        ]
    )
    return frame.head(n)


def time_the_pipeline(documents: pl.DataFrame) -> None:
    """A cold run, three cache-hit reruns and the results' assembly over the same warehouse: the reruns
    must ask the model nothing, so their time is the ledger's alone."""
    n = documents.height
    codebook = load_codebook(PILOT_CODEBOOK)
    with tempfile.TemporaryDirectory() as tmp, ModelServerStub(responder=answer_from_request) as stub:
        warehouse = Warehouse(Path(tmp) / "bench.duckdb")
        backend = ServedBackend("ollama", "qwen-test", [stub.host])

        started = time.perf_counter()
        first = classify_corpus(documents, codebook, backend, warehouse)
        cold = time.perf_counter() - started
        assert first.classified == n, first.failed[:3]

        reruns = []
        for _ in range(3):
            started = time.perf_counter()
            again = classify_corpus(documents, codebook, backend, warehouse)
            reruns.append(time.perf_counter() - started)
            assert again.model_calls == 0
        started = time.perf_counter()
        results = assemble_results(warehouse, documents, codebook, backend)
        assemble = time.perf_counter() - started

    print(f"documents: {n}")
    print(
        f"first run (loopback server, zero model latency): {cold:.2f} s = {1000 * cold / n:.2f} ms/doc "
        f"(HTTP round trip + JSON + validation + 6 audits + ledger commit)"
    )
    print(
        f"cache-hit rerun, median of 3: {statistics.median(reruns):.2f} s "
        f"= {1000 * statistics.median(reruns) / n:.3f} ms/doc; ratio cold/rerun "
        f"{cold / statistics.median(reruns):.1f}x"
    )
    print(f"assemble results from ledger: {assemble:.2f} s ({results.values.height} value rows)")


def time_an_index_per_audit(abstracts: list[str], quotes: list[str], typos: list[str]) -> None:
    """Each audit building its own index: the cost of the literal path and of the approximate/absent one."""
    for label, batch in (("literal", quotes), ("approximate/absent path", typos)):
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            for abstract, quote in zip(abstracts, batch):
                audit_evidence(quote, TextIndex(abstract), no_information=False)
            timings.append(time.perf_counter() - started)
        per = statistics.median(timings) / len(abstracts)
        print(f"audit throughput ({label}): {1 / per:,.0f} audits/s (median of 3, index built per audit)")


def time_an_index_per_document(abstracts: list[str], quotes: list[str], typos: list[str]) -> None:
    """As the pipeline audits: the document's index (title + abstract) built once for its six evidences;
    then the literal quotes alone against indexes built beforehand, the floor of that cost."""
    per_document = []
    for _ in range(3):
        started = time.perf_counter()
        for abstract, quote, typo in zip(abstracts, quotes, typos):
            index = DocumentIndex(abstract, "Um título")
            for evidence in (quote, quote, quote, quote, typo, quote):
                audit_evidence(evidence, index, no_information=False)
        per_document.append(time.perf_counter() - started)
    evidences = 6 * len(abstracts)
    print(
        f"audit throughput, index built once per document (5 literal + 1 approximate/absent of 6): "
        f"{evidences / statistics.median(per_document):,.0f} evidences/s (median of 3; target 100,000)"
    )
    literal_only = []
    for _ in range(3):
        indexes = [DocumentIndex(a, "Um título") for a in abstracts]
        started = time.perf_counter()
        for index, quote in zip(indexes, quotes):
            for _ in range(6):
                audit_evidence(quote, index, no_information=False)
        literal_only.append(time.perf_counter() - started)
    print(
        f"audit throughput, literal quotes against prebuilt indexes: "
        f"{evidences / statistics.median(literal_only):,.0f} evidences/s (median of 3)"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    documents = corpus_of(n)
    time_the_pipeline(documents)

    abstracts = documents["abstract"].to_list()[:500]
    quotes = [" ".join(a.split()[5:17]) for a in abstracts]
    typos = [q.replace("a", "á", 1) + " x" for q in quotes]
    time_an_index_per_audit(abstracts, quotes, typos)
    time_an_index_per_document(abstracts, quotes, typos)
    long_text = " ".join(abstracts) * 2
    index = TextIndex(long_text)
    started = time.perf_counter()
    for quote in typos[:50]:
        audit_evidence(quote, index, no_information=False)
    print(f"audit on a {len(long_text):,}-char text: {1000 * (time.perf_counter() - started) / 50:.2f} ms/audit")


if __name__ == "__main__":
    main()
