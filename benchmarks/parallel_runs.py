"""Range runs side by side over the shared ledger: throughput of 1, 2 and 4 runs (issue 30).

A real PostgreSQL server on loopback holds the shared ledger (a fresh database per measurement). The
corpus is N synthetic documents made from the real abstracts (scale.py's copies; the project's sample
when the shared data is not here), stored once per database as the `corpus` asset stores it. Each run
is a separate process doing what a `classify_shards_job` run does (`classify_shards` over its range
of shards) without Dagster's own start-up, so what is measured is the runs and the ledger:

- emulated model servers at 2 s per answer with enough slots (each run keeps 16 requests in flight):
  the runs should add up;
- the same at zero latency: the shared ledger's (and this 2-core machine's) own ceiling.

Then the results are pulled into DuckDB once (`pull_shared_ledger` + `refresh_results`), timed.
Figures: documents/s and the ratio to one run.

Last, launch to first model request of `adri classify` (a separate process, as users run it) on a
new corpus file of M documents, median of three cold launches, each killed once its first request
arrived.

    .venv/bin/python benchmarks/parallel_runs.py 960 10000 100000   # N at 2 s, N at zero latency, M
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import Counting, base_abstracts, write_corpus  # noqa: E402

from adri_pipeline.classification.codebook import load_codebook  # noqa: E402
from adri_pipeline.classification.corpus_reading import register_corpus
from adri_pipeline.classification.publishing import refresh_results
from adri_pipeline.classification.service import pull_shared_ledger, recorded_model
from adri_pipeline.classification.shards import shard_ranges, shards_of  # noqa: E402
from adri_pipeline.config import PILOT_CODEBOOK, Settings  # noqa: E402
from adri_pipeline.warehouse import Warehouse  # noqa: E402
from loopback.postgres_server import start_postgres  # noqa: E402

SLOTS_PER_RUN = 16
WORKER = (
    "import sys; from adri_pipeline.classification.service import classify_shards; "
    "from adri_pipeline.classification.context import RunContext; from adri_pipeline.config import Settings; "
    "r = classify_shards(RunContext.load(Settings()), sys.argv[1:], origin='bench'); "
    "sys.exit(0 if r.classified + r.cached == r.documents else 1)"
)


def measure(server, corpus: Path, folder: Path, host: str, runs: int) -> dict:
    url = server.url(server.new_database(f"bench{runs}"))
    settings = Settings.load(
        warehouse=folder / f"w{runs}_{time.monotonic_ns()}.duckdb",
        corpus=corpus,
        codebook=PILOT_CODEBOOK,
        backend="ollama",
        model="qwen-test",
        ollama_hosts=[f"{host}*{SLOTS_PER_RUN}"],
        ledger_url=url,
    )
    warehouse = Warehouse(settings.warehouse)
    documents = register_corpus(settings, warehouse).documents
    shards = shards_of(documents["doc_id"])
    ranges = shard_ranges(shards, math.ceil(len(shards) / runs))
    env = {
        **os.environ,
        "ADRI_LEDGER_URL": url,
        "ADRI_CORPUS": str(corpus),
        "ADRI_CODEBOOK": str(PILOT_CODEBOOK),
        "ADRI_BACKEND": "ollama",
        "ADRI_MODEL": "qwen-test",
        "ADRI_OLLAMA_HOSTS": f"{host}*{SLOTS_PER_RUN}",
        "ADRI_CONCURRENCY": str(SLOTS_PER_RUN),
        "ADRI_WAREHOUSE": str(settings.warehouse),
    }
    started = time.perf_counter()
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, *part], env=env) for part in ranges]
    codes = [w.wait() for w in workers]
    wall = time.perf_counter() - started
    assert codes == [0] * len(codes), codes
    began = time.perf_counter()
    pulled = pull_shared_ledger(settings, warehouse)
    refresh_results(warehouse, load_codebook(settings.codebook), recorded_model(warehouse))
    results_s = time.perf_counter() - began
    assert len(pulled) == documents.height
    return {
        "runs": runs,
        "documents": documents.height,
        "wall_s": wall,
        "docs_per_s": documents.height / wall,
        "results_s": results_s,
    }


def first_request(n: int, base: list[dict]) -> list[float]:
    """Seconds from launching `adri classify` to its first model request, three cold launches."""
    adri = Path(sys.executable).with_name("adri")
    seconds = []
    with tempfile.TemporaryDirectory() as tmp, Counting(delay=2.0) as stub:
        corpus = Path(tmp) / "corpus.jsonl"
        write_corpus(corpus, n, base)
        for attempt in range(3):
            stub.first_chat_at = None
            env = {**os.environ, "ADRI_OLLAMA_HOSTS": f"{stub.host}*16", "ADRI_CONCURRENCY": "16"}
            started = time.perf_counter()
            process = subprocess.Popen(
                [
                    str(adri),
                    "classify",
                    "--corpus",
                    str(corpus),
                    "--warehouse",
                    str(Path(tmp) / f"w{attempt}.duckdb"),
                    "--codebook",
                    str(PILOT_CODEBOOK),
                    "--backend",
                    "ollama",
                    "--model",
                    "qwen-test",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            while stub.first_chat_at is None and process.poll() is None:
                time.sleep(0.005)
            seconds.append(stub.first_chat_at - started)
            process.kill()
            process.wait()
    return seconds


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:3]] or [480, 6000]
    first_at = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    base, origin = base_abstracts()
    print(
        f"corpus: synthetic copies of {origin}; runs as processes over a loopback PostgreSQL ledger; "
        f"{SLOTS_PER_RUN} requests in flight per run; {os.cpu_count()} cores"
    )
    try:
        server = start_postgres()
    except BaseException as skipped:  # pytest's Skipped: no PostgreSQL server here
        print(f"runs side by side not measured: {skipped}")
        server = None
    try:
        for latency, n in zip((2.0, 0.0), sizes if server else []):
            with tempfile.TemporaryDirectory() as tmp, Counting(delay=latency) as stub:
                corpus = Path(tmp) / "corpus.jsonl"
                write_corpus(corpus, n, base)
                rows = [measure(server, corpus, Path(tmp), stub.host, runs) for runs in (1, 2, 4)]
            print(f"\nmodel latency {latency:g} s per answer, {n} documents")
            print("| runs side by side | wall s | documents/s | ratio to 1 run | results built after, s |")
            print("|---|---|---|---|---|")
            for row in rows:
                print(
                    f"| {row['runs']} | {row['wall_s']:.1f} | {row['docs_per_s']:.1f} | "
                    f"{row['docs_per_s'] / rows[0]['docs_per_s']:.2f} | {row['results_s']:.1f} |"
                )
    finally:
        if server:
            server.stop()
    seconds = first_request(first_at, base)
    print(
        f"\nlaunch to first request, `adri classify` on a new file of {first_at} documents: "
        f"median {sorted(seconds)[1]:.2f} s (runs: {', '.join(f'{s:.2f}' for s in seconds)})"
    )


if __name__ == "__main__":
    main()
