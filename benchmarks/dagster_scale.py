"""Dagster over a large corpus: `adri classify` fills the ledger, then one classify_documents_job over
every shard of documents (recording the shards' materializations) and the same range rerun, all
cached, in-process on a persistent sqlite instance. Documents are synthetic copies of the real
abstracts (scale.py); the model is the loopback server at zero latency, 4 slots.

    .venv/bin/python benchmarks/dagster_scale.py 100000     # SCALING.md (about 11 minutes, most of it the CLI)
"""

import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")

from benchmarks.scale import ADRI, SLOTS, Counting, base_abstracts, write_corpus  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    tmp = Path(tempfile.mkdtemp())
    corpus, warehouse = tmp / "corpus.jsonl", tmp / "wh" / "adri.duckdb"
    write_corpus(corpus, n, base_abstracts()[0])
    (tmp / "home").mkdir()
    (tmp / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    os.environ["DAGSTER_HOME"] = str(tmp / "home")
    from adri_pipeline.config import PILOT_CODEBOOK
    from adri_pipeline.defs.resources import AdriSettings

    with Counting() as stub:
        started = time.perf_counter()
        subprocess.run(
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
            check=True,
            env={**os.environ, "ADRI_OLLAMA_HOSTS": f"{stub.host}*{SLOTS}"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        print(f"documents: {n} synthetic; adri classify (cold): {time.perf_counter() - started:.1f} s", flush=True)
        adri = AdriSettings(
            warehouse=str(warehouse),
            corpus=str(corpus),
            codebook=str(PILOT_CODEBOOK),
            backend="ollama",
            model="qwen-test",
            ollama_hosts=stub.host,
        )
        time_the_range_runs(adri)
    size = sum(f.stat().st_size for f in (tmp / "home").rglob("*") if f.is_file())
    print(f"instance size: {size / 2**20:.1f} MB")


def time_the_range_runs(adri) -> None:
    """The shards registered, then one range run over all of them and the same again with every answer in
    the ledger: what Dagster itself costs once the model's work is done."""
    import dagster as dg

    from adri_pipeline.definitions import defs
    from adri_pipeline.defs.classification.jobs import range_tags
    from adri_pipeline.in_process import register_documents, resources_for

    with dg.DagsterInstance.get() as instance:
        started = time.perf_counter()
        shards, _ = register_documents(instance, adri)
        print(f"register: {time.perf_counter() - started:.1f} s, {len(shards)} shards", flush=True)
        job = defs.resolve_job_def("classify_documents_job")
        for label in ("range run over every shard (records the shards)", "the same range rerun, all cached"):
            started = time.perf_counter()
            result = job.execute_in_process(
                instance=instance,
                tags=range_tags(shards),
                resources=resources_for(adri),
                run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
            )
            events = sum(1 for e in result.all_events if e.event_type_value == "ASSET_MATERIALIZATION" and e.partition)
            print(
                f"{label}: {time.perf_counter() - started:.1f} s, success {result.success}, "
                f"{events} shard materializations",
                flush=True,
            )


if __name__ == "__main__":
    main()
