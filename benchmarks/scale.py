"""Scale: how the cost of `adri classify` grows with the corpus (issue 23).

For each size N: synthetic documents made from the real abstracts (../shared/data/corpus, holdout
ids left out; the project's sample when the shared data is not here), each copy with its own id and a
marker in its text so every cache key is new. A loopback server speaking Ollama's API answers at once
(zero model latency: what is measured is the pipeline, not a model) with 4 slots. `adri classify` runs
as a separate process, as users run it:

- cold run: wall time, documents/s, the share spent rebuilding results and republishing the snapshot,
  peak RSS of the process, warehouse and snapshot size;
- kill -9 once half the documents were asked, then a rerun: requests sent by the rerun (should be the
  other half, plus the few in flight) and its time;
- cached rerun (every answer in the ledger): wall time from launch;
- launch to first model request.

Then each figure's ratio per x4 documents (1.0 = grows with the work).

    .venv/bin/python benchmarks/scale.py 2000 8000            # make bench
    .venv/bin/python benchmarks/scale.py 5000 20000           # figures in BENCHMARKS.md
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.classification.corpus import load_corpus  # noqa: E402
from adri_pipeline.config import PILOT_CODEBOOK, SAMPLE_CORPUS, SHARED_DATA  # noqa: E402
from loopback.fakes import answer_from_request  # noqa: E402
from loopback.model_server import ModelServerStub  # noqa: E402

ADRI = Path(sys.executable).with_name("adri")
SLOTS = 4


def base_abstracts() -> tuple[list[dict], str]:
    """(documents with title, abstract, year, doi; where they come from)."""
    shared = SHARED_DATA / "corpus"
    files = sorted(shared.glob("*.jsonl")) if shared.is_dir() else []
    if files:
        reserved = set((shared / "holdout_ids.txt").read_text(encoding="utf-8").split())
        rows = [
            r
            for f in files
            for r in load_corpus(f).documents.iter_rows(named=True)
            if r["doc_id"] not in reserved and r["abstract"]
        ]
        return rows, f"{len(rows)} real abstracts from {shared} (holdout left out)"
    rows = [r for r in load_corpus(SAMPLE_CORPUS).documents.iter_rows(named=True) if r["abstract"]]
    return rows, f"{len(rows)} synthetic abstracts of the project's sample"


def write_corpus(path: Path, n: int, base: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            row = base[i % len(base)]
            copy = i // len(base)
            f.write(
                json.dumps(
                    {
                        "id": f"{row['doc_id']}-{copy}",
                        "title": row["title"],
                        "abstract": f"{row['abstract']} (cópia {copy})",
                        "year": row.get("year"),
                        # a DOI names one work: only the first copy keeps it
                        "doi": row.get("doi") if copy == 0 else None,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )


class Counting(ModelServerStub):
    """The loopback server, counting chats instead of keeping them (100k request bodies would not fit)."""

    def __init__(self, **kwargs):
        super().__init__(responder=answer_from_request, **kwargs)
        self.chat_count, self.first_chat_at = 0, None

    def _record(self, path, request):
        if path in ("/api/chat", "/v1/chat/completions"):
            with self.lock:
                self.chat_count += 1
                self.first_chat_at = self.first_chat_at or time.perf_counter()


def watch(process: subprocess.Popen, peak: list[int], kill_after: int | None, stub: Counting | None) -> None:
    """Until the process ends, its peak RSS in `peak[0]`, sampled every 50 ms; SIGKILL once `kill_after`
    chats reached the server, as a worker dying mid-run."""
    try:
        handle = psutil.Process(process.pid)
        while process.poll() is None:
            peak[0] = max(peak[0], handle.memory_info().rss)
            if kill_after is not None and stub.chat_count >= kill_after:
                os.kill(process.pid, signal.SIGKILL)
                return
            time.sleep(0.05)
    except psutil.Error:
        pass


def classify(
    corpus: Path, warehouse: Path, host: str, kill_after: int | None = None, stub: Counting | None = None
) -> dict:
    """One `adri classify` process: wall seconds, peak RSS (MB), its summary lines; killed with SIGKILL
    once `kill_after` chats reached the server."""
    env = {**os.environ, "ADRI_OLLAMA_HOSTS": f"{host}*{SLOTS}", "ADRI_CONCURRENCY": str(SLOTS)}
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            str(ADRI),
            "classify",
            "--corpus",
            str(corpus),
            "--warehouse",
            str(warehouse),
            "--codebook",
            str(PILOT_CODEBOOK),
            "--backend",
            "ollama",
            "--model",
            "qwen-test",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    peak = [0]
    watcher = threading.Thread(target=watch, args=(process, peak, kill_after, stub), daemon=True)
    watcher.start()
    out, _ = process.communicate()
    wall = time.perf_counter() - started
    watcher.join()
    publishing = re.search(r"republishing results and snapshot ([\d.]+) s", out)
    return {
        "wall": wall,
        "rss_mb": peak[0] / 2**20,
        "code": process.returncode,
        "started": started,
        "publishing": float(publishing.group(1)) if publishing else float("nan"),
        "out": out,
    }


def measure(n: int, base: list[dict]) -> dict:
    with tempfile.TemporaryDirectory() as tmp, Counting() as stub:
        folder = Path(tmp)
        corpus = folder / "corpus.jsonl"
        write_corpus(corpus, n, base)
        cold = classify(corpus, folder / "cold" / "adri.duckdb", stub.host)
        assert cold["code"] == 0, cold["out"][-2000:]
        first_request = stub.first_chat_at - cold["started"]
        sizes = sum(p.stat().st_size for p in (folder / "cold").glob("*.duckdb"))
        cached = classify(corpus, folder / "cold" / "adri.duckdb", stub.host)
        asked_before = stub.chat_count
        classify(corpus, folder / "killed" / "adri.duckdb", stub.host, kill_after=asked_before + n // 2, stub=stub)
        asked_at_kill = stub.chat_count
        resumed = classify(corpus, folder / "killed" / "adri.duckdb", stub.host)
        return {
            "n": n,
            "cold_s": cold["wall"],
            "docs_per_s": n / cold["wall"],
            "publishing_s": cold["publishing"],
            "publishing_share": cold["publishing"] / cold["wall"],
            "rss_mb": cold["rss_mb"],
            "warehouse_mb": sizes / 2**20,
            "cached_s": cached["wall"],
            "first_request_s": first_request,
            "killed_after": asked_at_kill - asked_before,
            "resume_requests": stub.chat_count - asked_at_kill,
            "resume_s": resumed["wall"],
        }


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [2000, 8000]
    base, origin = base_abstracts()
    print(
        f"documents: synthetic copies of {origin}; loopback Ollama-protocol server at zero latency, {SLOTS} slots;"
        " each run is a separate `adri classify` process"
    )
    results = []
    for n in sizes:
        r = measure(n, base)
        results.append(r)
        print(
            f"N={n:>7}: cold {r['cold_s']:8.1f} s ({r['docs_per_s']:6.1f} docs/s), "
            f"republishing {r['publishing_s']:6.1f} s ({100 * r['publishing_share']:4.1f} %), "
            f"peak RSS {r['rss_mb']:6.0f} MB, warehouse+snapshot {r['warehouse_mb']:6.1f} MB | "
            f"launch to first request {r['first_request_s']:.2f} s | cached rerun {r['cached_s']:6.1f} s | "
            f"kill -9 after {r['killed_after']} requests, rerun asked {r['resume_requests']} "
            f"in {r['resume_s']:.1f} s",
            flush=True,
        )
    for a, b in zip(results, results[1:]):
        scale = b["n"] / a["n"]
        grow = {
            k: (b[k] / a[k]) if a[k] else float("nan")
            for k in ("cold_s", "publishing_s", "rss_mb", "warehouse_mb", "cached_s", "resume_s")
        }
        print(f"x{scale:g} documents ({a['n']} -> {b['n']}): " + ", ".join(f"{k} x{v:.2f}" for k, v in grow.items()))


if __name__ == "__main__":
    main()
