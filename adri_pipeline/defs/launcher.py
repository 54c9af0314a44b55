"""The one-machine run launcher with a health check, so run monitoring notices a dead run worker.

Dagster's DefaultRunLauncher starts each run worker as a process on this machine but cannot tell
whether it is still alive: a worker killed with `kill -9` stays STARTED forever and run retries never
fire. This launcher answers run monitoring's health check from the worker's process id (the engine
event "Started process for run (pid: N)"). Across machines the launchers that Dagster ships
(K8sRunLauncher, DockerRunLauncher) check their workers themselves (deploy/README.md).

The health check's result type is imported from `dagster._core.launcher`: dagster 1.13.27 exports
neither `CheckRunHealthResult` nor `WorkerStatus`, and a launcher that answers run monitoring cannot
be written without them (Dagster's own launchers and its guide to custom run launchers import them
from there). The import is this module's alone; an upgrade that moves them fails at import.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import psutil
from dagster import DagsterEventType, DefaultRunLauncher
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus

from adri_pipeline.errors import AdriError


class LocalRunLauncher(DefaultRunLauncher):
    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run) -> CheckRunHealthResult:
        pid = _worker_pid(self._instance, run.run_id)
        if pid is None:
            # STARTED can be recorded a moment before the process id: not a dead worker
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no worker process recorded yet")
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return CheckRunHealthResult(
                    WorkerStatus.RUNNING, f"worker process {pid} is running", run_worker_id=str(pid)
                )
        except psutil.NoSuchProcess:
            pass
        return CheckRunHealthResult(
            WorkerStatus.FAILED,
            f"run worker process {pid} is gone (killed, or the machine's memory ran out)",
            run_worker_id=str(pid),
        )


def _worker_pid(instance, run_id: str) -> int | None:
    """The process id of the run's latest worker, from its engine events (a resumed run has several)."""
    pid = None
    for record in instance.get_records_for_run(run_id, of_type=DagsterEventType.ENGINE_EVENT).records:
        event = record.event_log_entry.dagster_event
        metadata = event.engine_event_data.metadata if event and event.engine_event_data else {}
        if "pid" in metadata and "Started process for run" in (event.message or ""):
            pid = int(metadata["pid"].value)
    return pid


class LaunchRefused(AdriError, RuntimeError):
    """`adri launch` without the shared ledger, or a Dagster webserver that refused the run."""


def launch_classification(settings, dagster_url: str) -> str:
    """Ask a Dagster deployment (its webserver, by Dagster's GraphQL client) to classify its corpus as
    runs side by side: register_corpus_job now, then shard_runs_sensor cuts the range into runs and
    results_after_shard_runs_sensor builds the results once they end. Returns the first run's id."""
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    if not settings.ledger_url:
        raise LaunchRefused(
            "adri launch needs the shared ledger (ADRI_LEDGER_URL, as in the deployment's "
            "environment); on one machine, `adri classify` classifies in one process"
        )
    address = urlsplit(dagster_url if "//" in dagster_url else f"http://{dagster_url}")
    client = DagsterGraphQLClient(
        address.hostname or "127.0.0.1",
        port_number=address.port,
        use_https=address.scheme == "https",
        path_prefix=address.path.rstrip("/"),
    )
    try:
        return client.submit_job_execution("register_corpus_job", tags={"adri/launched_by": "adri launch"})
    except (DagsterGraphQLClientError, OSError) as exc:
        raise LaunchRefused(f"{dagster_url}: the Dagster webserver did not take the run: {exc}") from None
