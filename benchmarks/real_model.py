"""A real generative model end to end: llama.cpp's llama-server with Gemma 3 270M (`make llm`) on
loopback, classifying REAL abstracts (the first N OpenAlex abstracts of ../shared/data that are not
reserved in holdout_ids.txt) with the pilot codebook, at 1 and at 2 server slots.

Prints ADR 0011's figures for the model (JSON valid first try, follows the codebook first try,
retries, literal / approximate / absent, s/doc median and p90), documents/s, and how busy the
slots were: the server's own time per request (prompt + generation, from its timings) summed over
the run ÷ (slots × wall time). On 2 cores, 2 slots share the CPU: the speed-up is what it is.

    .venv/bin/python benchmarks/real_model.py [DOCUMENTS]
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.classification.results import figures_lines  # noqa: E402
from adri_pipeline.classification.service import classify_corpus_file  # noqa: E402
from adri_pipeline.config import PILOT_CODEBOOK, SHARED_DATA, Settings  # noqa: E402
from adri_pipeline.models import llama_server  # noqa: E402


def real_abstracts(n: int, folder: Path) -> Path:
    reserved = set((SHARED_DATA / "corpus" / "holdout_ids.txt").read_text().split())
    rows = [
        json.loads(line)
        for line in (SHARED_DATA / "corpus" / "openalex_direito_alimentacao.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    chosen = [r for r in rows if r["id"] not in reserved and r.get("abstract")][:n]
    path = folder / f"real{n}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(corpus: Path, slots: int, folder: Path) -> None:
    port = free_port()
    process = llama_server.start(port=port, slots=slots)
    server_seconds = []

    def progress(outcome, total):
        server_seconds.extend(
            a.response.timings.get("prompt_eval_s", 0) + a.response.timings.get("eval_s", 0) for a in outcome.attempts
        )

    try:
        settings = Settings(
            warehouse=folder / f"slots{slots}" / "adri.duckdb",
            corpus=corpus,
            backend="openai",
            model=llama_server.ALIAS,
            openai_hosts=[f"http://127.0.0.1:{port}/v1*{slots}"],
            codebook=PILOT_CODEBOOK,
        )
        started = time.perf_counter()
        classification, _ = classify_corpus_file(settings, progress=progress)
        wall = time.perf_counter() - started
    finally:
        llama_server.stop(process)
    report = classification.report
    print(
        f"\n{slots} slot(s): {report.classified} stored, {len(report.failed)} without an answer that follows the "
        f"codebook, {report.model_calls} requests, {wall:.0f} s -> {report.documents / wall * 3600:.0f} documents/h; "
        f"slots busy {sum(server_seconds) / (slots * wall):.3f}"
    )
    for reason in {r for _, r in report.failed}:
        print(f"  failed: {reason}")
    for line in figures_lines(classification.figures):
        print("  " + line)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    with tempfile.TemporaryDirectory() as tmp:
        corpus = real_abstracts(n, Path(tmp))
        print(f"Gemma 3 270M (base, Q4_K_M) on llama-server; {n} real OpenAlex abstracts (not holdout); pilot codebook")
        for slots in (1, 2):
            run(corpus, slots, Path(tmp))


if __name__ == "__main__":
    main()
