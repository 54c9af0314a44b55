"""H3 served, the old stack against the new, in one benchmark run: `adri routing serve` from a checkout
of the commit before it moved to Starlette + uvicorn (ThreadingHTTPServer, `--old-tree`) and from this
tree, the same candidate fitted on the same dataset, both started fresh, then one `adri routing run`
that measures both over the wire (`jev:<url>`, three independent performance runs by default).
The old server's code is reached only here, from its own checkout.

    git archive 5c9ab66 | tar -x -C /tmp/serve-old     # the commit before the move
    .venv/bin/python benchmarks/serve_stacks.py --old-tree /tmp/serve-old [--candidate static-logreg] [--runs 3]
        [--new-first]

Prints, per stack, ms per decision p50 / p95 and p95 per turn (the H3 figure), with the load average
before and after.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loopback.systemone_servers import BIN, free_port, process_server  # noqa: E402


def serve(tree: Path, candidate: str, dataset: str, folder: Path):
    """`adri routing serve` from `tree`'s code (its folder first on PYTHONPATH)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    command = [
        str(BIN / "python"),
        "-m",
        "adri_pipeline.cli",
        "routing",
        "serve",
        "--dataset",
        dataset,
        "--candidate",
        candidate,
        "--port",
        str(port),
        "--warehouse",
        str(folder / "w.duckdb"),
    ]
    return process_server(command, port, ready_path="/v1/models", timeout_s=1200.0, env=env, log=folder / "serve.log")


def measure(urls: dict[str, str], dataset: str, runs: int, folder: Path) -> dict:
    candidates = ",".join(f"jev:{url}" for url in urls.values())
    command = [
        str(BIN / "python"),
        "-m",
        "adri_pipeline.cli",
        "routing",
        "run",
        "--dataset",
        dataset,
        "--runs",
        str(runs),
        "--candidates",
        candidates,
        "--out-of-source",
        "none",
        "--warehouse",
        str(folder / "w.duckdb"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    metrics = json.loads(next(folder.glob("routing/*/metrics.json")).read_text(encoding="utf-8"))
    return {stack: metrics["results"][f"jev:{url}"] for stack, url in urls.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-tree", type=Path, required=True)
    parser.add_argument("--candidate", default="static-logreg")
    parser.add_argument("--dataset", default="sample")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--new-first", action="store_true", help="measure the new stack first (the order's share)")
    options = parser.parse_args()
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {stack: Path(tmp) / stack for stack in ("old", "new", "run")}
        for folder in folders.values():
            folder.mkdir()
        with (
            serve(options.old_tree, options.candidate, options.dataset, folders["old"]) as old,
            serve(ROOT, options.candidate, options.dataset, folders["new"]) as new,
        ):
            stacks = {"old (ThreadingHTTPServer)": old, "new (Starlette + uvicorn)": new}
            if options.new_first:
                stacks = dict(reversed(stacks.items()))
            results = measure(stacks, options.dataset, options.runs, folders["run"])
    print(f"load average after: {os.getloadavg()}")
    for stack, result in results.items():
        per_decision, per_turn = result["latency_ms"], result["latency_per_turn_ms_percentiles"]
        print(
            f"{stack}: {options.candidate} served, ms per decision p50 {per_decision['p50']:.1f} / p95 "
            f"{per_decision['p95']:.1f}; p95 per turn {per_turn['p95']:.1f} ms"
        )


if __name__ == "__main__":
    main()
