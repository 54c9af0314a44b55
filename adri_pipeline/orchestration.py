"""Run the asset graph in-process (demo, tests, benchmarks): register documents as partitions,
one range run of classify_documents_job, then refresh_results_job (what the run-status sensor
does under the daemon), then routing_benchmark_job and mirror_evaluation_job."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from adri_pipeline.assets.corpus import documents_partitions
from adri_pipeline.corpus import load_corpus
from adri_pipeline.definitions import defs
from adri_pipeline.io_managers import DuckDBContentHashIOManager
from adri_pipeline.jobs import range_tags
from adri_pipeline.resources import AdriSettings


@dataclass
class GraphRun:
    classify: dg.ExecuteInProcessResult
    results: dg.ExecuteInProcessResult
    routing: dg.ExecuteInProcessResult
    mirror: dg.ExecuteInProcessResult
    documents: int
    new_partitions: int


def resources_for(adri: AdriSettings) -> dict:
    return {"adri": adri, "content_hash_io_manager": DuckDBContentHashIOManager(adri=adri)}


def register_documents(instance: dg.DagsterInstance, adri: AdriSettings) -> tuple[list[str], int]:
    settings = adri.settings()
    doc_ids = load_corpus(settings.corpus, settings.display_language, settings.analysis_language
                          ).documents["doc_id"].to_list()
    known = set(instance.get_dynamic_partitions(documents_partitions.name))
    new = [d for d in doc_ids if d not in known]
    if new:
        instance.add_dynamic_partitions(documents_partitions.name, new)
    return doc_ids, len(new)


def materialize_graph(
    instance: dg.DagsterInstance, adri: AdriSettings, raise_on_error: bool = True, log_level: str = "INFO"
) -> GraphRun:
    doc_ids, new = register_documents(instance, adri)
    common = {
        "instance": instance, "resources": resources_for(adri), "raise_on_error": raise_on_error,
        "run_config": {"loggers": {"console": {"config": {"log_level": log_level}}}},
    }
    classify = defs.resolve_job_def("classify_documents_job").execute_in_process(tags=range_tags(doc_ids), **common)
    results = defs.resolve_job_def("refresh_results_job").execute_in_process(**common)
    routing = defs.resolve_job_def("routing_benchmark_job").execute_in_process(**common)
    mirror = defs.resolve_job_def("mirror_evaluation_job").execute_in_process(**common)
    return GraphRun(classify, results, routing, mirror, len(doc_ids), new)
