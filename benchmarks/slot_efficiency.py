"""Does the pipeline keep a server's parallel slots busy? (issue 14 (a); ADR 0011's 13-hour pilot is
`documents / (slots / seconds per document)`.)

A loopback server speaking Ollama's API emulates a model that generates `tokens/s` with N parallel
slots (a request holds a slot for completion_tokens / tokens_per_s seconds; more requests wait for a
slot, as OLLAMA_NUM_PARALLEL does). The real `ollama` client and the whole per-document loop run
against a server with 1 slot and with N slots (the client is told the same, `host*N`). Efficiency =
documents/s achieved ÷ the server's capacity (slots / seconds per request). Target >= 0.98.
Synthetic documents (copies of the sample).

    .venv/bin/python benchmarks/slot_efficiency.py [DOCUMENTS] [SLOTS] [TOKENS_PER_S] [HOSTS]

With HOSTS > 1, that many loopback servers with SLOTS slots each (`host*SLOTS,...`): is one process
enough to keep many servers busy? (issue 23: 8 hosts x 8 slots at ~2 s per answer.)
"""

from __future__ import annotations

import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.classification.backends.served import ServedBackend  # noqa: E402
from adri_pipeline.classification.codebook import load_codebook  # noqa: E402
from adri_pipeline.classification.runner import classify_corpus  # noqa: E402
from adri_pipeline.config import PILOT_CODEBOOK  # noqa: E402
from adri_pipeline.warehouse import Warehouse  # noqa: E402
from benchmarks.classification_overhead import corpus_of  # noqa: E402
from loopback.fakes import answer_from_request  # noqa: E402
from loopback.model_server import ModelServerStub  # noqa: E402

COMPLETION_TOKENS = 123  # what the loopback server reports per answer


def run(documents, codebook, slots: int, seconds_per_request: float, hosts: int = 1) -> float:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as servers:
        stubs = [
            servers.enter_context(
                ModelServerStub(responder=answer_from_request, delay=seconds_per_request, slots=slots)
            )
            for _ in range(hosts)
        ]
        backend = ServedBackend("ollama", "qwen-test", [f"{stub.host}*{slots}" for stub in stubs])
        started = time.perf_counter()
        report = classify_corpus(
            documents, codebook, backend, Warehouse(Path(tmp) / "bench.duckdb"), concurrency=hosts * slots
        )
        elapsed = time.perf_counter() - started
        assert report.classified == documents.height and report.model_calls == documents.height, report.failed[:3]
    return documents.height / elapsed


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    slots = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    tokens_per_s = float(sys.argv[3]) if len(sys.argv) > 3 else 600.0
    hosts = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    seconds = COMPLETION_TOKENS / tokens_per_s
    codebook = load_codebook(PILOT_CODEBOOK)
    documents = corpus_of(n)
    print(
        f"emulated model: {tokens_per_s:g} tokens/s x {COMPLETION_TOKENS} tokens = {seconds * 1000:.0f} ms per "
        f"request, {slots} slots; {n} synthetic documents"
    )
    if hosts > 1:
        achieved = run(documents, codebook, slots, seconds, hosts)
        capacity = hosts * slots / seconds
        print(
            f"{hosts} hosts x {slots} slots: {achieved:.2f} documents/s of {capacity:.2f} possible "
            f"-> efficiency {achieved / capacity:.3f}"
        )
        return
    for server_slots in (1, slots):
        achieved = run(documents, codebook, server_slots, seconds)
        capacity = server_slots / seconds
        print(
            f"{server_slots} slot(s): {achieved:.2f} documents/s of {capacity:.2f} possible "
            f"-> efficiency {achieved / capacity:.3f}"
        )


if __name__ == "__main__":
    main()
