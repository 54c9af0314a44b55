"""Run the code location's asset graph in-process (demo, tests, benchmarks), from above it: register the
documents' shards as partitions, one range run of classify_documents_job, then refresh_results_job (what the
results' automation condition does under the daemon), then routing_benchmark_job and mirror_evaluation_job."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from adri_pipeline.definitions import defs
from adri_pipeline.defs.classification.corpus import register_documents
from adri_pipeline.defs.classification.jobs import range_tags
from adri_pipeline.defs.io_managers import DuckDBContentHashIOManager
from adri_pipeline.defs.resources import AdriSettings

ALL_JOBS = ("classify", "results", "routing", "mirror", "review")
JOB_NAMES = {
    "classify": "classify_documents_job",
    "results": "refresh_results_job",
    "routing": "routing_benchmark_job",
    "mirror": "mirror_evaluation_job",
    "review": "review_job",
}


@dataclass
class GraphRun:
    shards: int
    new_partitions: int
    classify: dg.ExecuteInProcessResult | None = None
    results: dg.ExecuteInProcessResult | None = None
    routing: dg.ExecuteInProcessResult | None = None
    mirror: dg.ExecuteInProcessResult | None = None
    review: dg.ExecuteInProcessResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # job -> wall-clock seconds it took

    @property
    def review_site(self) -> str:
        """The review pages' index the review job wrote (the job also publishes the analyst snapshot)."""
        [site] = [
            e.event_specific_data.materialization.metadata["path"].value
            for e in self.review.all_events
            if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key.to_user_string() == "review_site"
        ]
        return site

    @property
    def success(self) -> bool:
        return all(
            r.success for r in (self.classify, self.results, self.routing, self.mirror, self.review) if r is not None
        )


def resources_for(adri: AdriSettings) -> dict:
    return {"adri": adri, "content_hash_io_manager": DuckDBContentHashIOManager(adri=adri)}


def materialize_graph(
    instance: dg.DagsterInstance,
    adri: AdriSettings,
    raise_on_error: bool = True,
    log_level: str = "INFO",
    jobs: tuple[str, ...] = ALL_JOBS,
    before_job: Callable[[str], None] | None = None,
) -> GraphRun:
    """Run the named jobs in order (tests run only those they assert on). The results refresh runs
    after a failed classification too, as their automation condition does under the daemon.
    `before_job(job)` is told each job as it starts (the demo's progress line)."""
    shards, new = register_documents(instance, adri.settings())
    common = {
        "instance": instance,
        "resources": resources_for(adri),
        "raise_on_error": raise_on_error,
        "run_config": {"loggers": {"console": {"config": {"log_level": log_level}}}},
    }
    graph = GraphRun(len(shards), new)
    for job in jobs:
        if before_job is not None:
            before_job(job)
        tags = range_tags(shards) if job == "classify" else None
        started = time.perf_counter()
        setattr(graph, job, defs.resolve_job_def(JOB_NAMES[job]).execute_in_process(tags=tags, **common))
        graph.seconds[job] = time.perf_counter() - started
    return graph
