"""Dagster's own overhead on a range run over shards of documents, on a persistent (sqlite) instance.

Side by side in one process, over the same N synthetic documents and the loopback Ollama server
at zero model latency: (a) the engine alone (classify_corpus), (b) one classify_documents_job range
run over the shards of N documents (256 at most) into a fresh warehouse, (c) the same range rerun (all cached: no
per-document events), (d) refresh_results_job.

    .venv/bin/python benchmarks/dagster_range_run.py [N]
"""

import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")

import dagster as dg  # noqa: E402

from adri_pipeline.classification.backends.served import ServedBackend  # noqa: E402
from adri_pipeline.classification.codebook import load_codebook  # noqa: E402
from adri_pipeline.classification.runner import classify_corpus  # noqa: E402
from adri_pipeline.config import PILOT_CODEBOOK  # noqa: E402
from adri_pipeline.definitions import defs  # noqa: E402
from adri_pipeline.defs.classification.jobs import range_tags  # noqa: E402
from adri_pipeline.defs.resources import AdriSettings  # noqa: E402
from adri_pipeline.in_process import register_documents, resources_for  # noqa: E402
from adri_pipeline.warehouse import Warehouse  # noqa: E402
from benchmarks.classification_overhead import corpus_of  # noqa: E402
from loopback.fakes import answer_from_request  # noqa: E402
from loopback.model_server import ModelServerStub  # noqa: E402


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def write_corpus(tmp: Path, n: int) -> Path:
    """n distinct documents as a corpus file, the form `adri` and the assets read."""
    documents = corpus_of(n)
    corpus_file = tmp / "corpus.jsonl"
    with corpus_file.open("w", encoding="utf-8") as f:
        for row in documents.iter_rows(named=True):
            f.write(
                json.dumps(
                    {"id": row["doc_id"], "title": row["title"], "abstract": row["abstract"]}, ensure_ascii=False
                )
                + "\n"
            )
    return corpus_file


def time_the_range_runs(adri: AdriSettings) -> dict:
    """One range run over every shard cold, the same again with every answer cached, then the results'
    refresh: the Dagster side of the comparison, with the shards registered and the materializations
    recorded."""
    run_config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with dg.DagsterInstance.get() as instance:
        registered, registering_s = timed(lambda: register_documents(instance, adri))
        shards = registered[0]
        job = defs.resolve_job_def("classify_documents_job")

        def range_run():
            return job.execute_in_process(
                instance=instance, tags=range_tags(shards), resources=resources_for(adri), run_config=run_config
            )

        cold, cold_s = timed(range_run)
        warm, warm_s = timed(range_run)
        refresh, refresh_s = timed(
            lambda: defs.resolve_job_def("refresh_results_job").execute_in_process(
                instance=instance, resources=resources_for(adri), run_config=run_config
            )
        )
        assert cold.success and warm.success and refresh.success
        events = sum(1 for e in cold.all_events if e.event_type_value == "ASSET_MATERIALIZATION" and e.partition)
    return {
        "shards": shards,
        "registering_s": registering_s,
        "cold_s": cold_s,
        "warm_s": warm_s,
        "refresh_s": refresh_s,
        "events": events,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    tmp = Path(tempfile.mkdtemp())
    corpus_file = write_corpus(tmp, n)
    codebook = PILOT_CODEBOOK
    (tmp / "home").mkdir()
    (tmp / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    os.environ["DAGSTER_HOME"] = str(tmp / "home")

    with ModelServerStub(responder=answer_from_request) as stub:
        from adri_pipeline.classification.corpus import load_corpus

        loaded = load_corpus(corpus_file).documents
        engine, engine_s = timed(
            lambda: classify_corpus(
                loaded,
                load_codebook(codebook),
                ServedBackend("ollama", "qwen-test", [stub.host]),
                Warehouse(tmp / "engine.duckdb"),
            )
        )
        assert engine.classified == n

        adri = AdriSettings(
            warehouse=str(tmp / "dagster.duckdb"),
            corpus=str(corpus_file),
            codebook=str(codebook),
            backend="ollama",
            model="qwen-test",
            ollama_hosts=stub.host,
        )
        ran = time_the_range_runs(adri)
    cold_s = ran["cold_s"]

    print(f"documents: {n} (loopback server, zero model latency; instance: sqlite in {tmp / 'home'})")
    print(f"engine alone (classify_corpus):           {engine_s:7.2f} s  {1000 * engine_s / n:6.2f} ms/doc")
    print(
        f"classify_documents_job, one range run:    {cold_s:7.2f} s  {1000 * cold_s / n:6.2f} ms/doc "
        f"({ran['events']} shard materializations over {len(ran['shards'])} shards, registered in "
        f"{ran['registering_s']:.2f} s)"
    )
    print(
        f"Dagster overhead per document:            {1000 * (cold_s - engine_s) / n:6.2f} ms/doc "
        f"(ratio range run / engine {cold_s / engine_s:.2f}x)"
    )
    print(f"same range rerun (all cached, no events): {ran['warm_s']:7.2f} s")
    print(f"refresh_results_job:                      {ran['refresh_s']:7.2f} s")
    size = sum(f.stat().st_size for f in (tmp / "home").rglob("*") if f.is_file())
    print(f"instance size:                            {size / 2**20:7.1f} MB")


if __name__ == "__main__":
    main()
