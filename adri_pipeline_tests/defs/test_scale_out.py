"""Past one machine, run for real: PostgreSQL, `dagster-daemon` and `dagster-webserver` on loopback with
deploy/dagster.yaml, the shared ledger, `adri launch`; a range cut into runs side by side, one run
worker killed with SIGKILL mid-range; the run is failed by run monitoring, retried, and resumes from
the ledger. The DuckDB results equal a one-process run's."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from adri_pipeline.classification.service import classify_corpus_file
from adri_pipeline.config import PROJECT_ROOT, Settings
from adri_pipeline_tests.conftest import SAMPLE
from loopback.fakes import answer_from_request, document_text
from loopback.model_server import ModelServerStub
from loopback.systemone_servers import free_port

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SHARDS_PER_RUN = 4
ANSWER_S = 1.0  # each answer takes a second at the model: a run is mid-range for several seconds


def _values(path: Path):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT doc_id, variable, value, evidencia, audit_status, evidence_start, evidence_end, "
            "cache_key FROM classification_values ORDER BY ALL"
        ).fetchall()


def _wait(condition, timeout_s: float, what: str, every_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _worker_pid(instance, run_id: str) -> int | None:
    from adri_pipeline.defs.launcher import _worker_pid

    return _worker_pid(instance, run_id)


def _most_at_once(records) -> int:
    """The most runs that were running at the same moment, from their start and end times."""
    edges = sorted(
        [(r.start_time, 1) for r in records if r.start_time] + [(r.end_time, -1) for r in records if r.end_time]
    )
    most = running = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def _one_process_run(tmp_path: Path, host: str) -> tuple[Settings, int]:
    """The same corpus classified in one process, every document answered: the warehouse the range's runs
    must end equal to, and how many documents there are."""
    alone = Settings.load(
        warehouse=tmp_path / "alone" / "w.duckdb",
        corpus=SAMPLE,
        backend="ollama",
        model="qwen-test",
        ollama_hosts=[host],
        concurrency=4,
    )
    run, corpus = classify_corpus_file(alone)
    documents = corpus.documents.height
    assert run.report.classified == documents
    return alone, documents


@pytest.fixture
def instance_env(postgres_server, tmp_path, monkeypatch) -> dict[str, str]:
    """A Dagster instance as deploy/dagster.yaml makes it, on the test's PostgreSQL: set here for the test's
    own DagsterInstance.get(), and returned for the services and `adri launch` it starts."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    env = {
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_USERNAME": "postgres",
        "DAGSTER_PG_PASSWORD": "",
        "DAGSTER_PG_HOST": "127.0.0.1",
        "DAGSTER_PG_DB": postgres_server.new_database("dagster"),
        "DAGSTER_PG_PORT": str(postgres_server.port),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _range_env(instance_env: dict[str, str], ledger_url: str, tmp_path: Path, host: str) -> dict[str, str]:
    """What the daemon, the webserver and `adri launch` share: the instance, the ledger, the warehouse and
    the model, with one answer at a time per worker so a run stays mid-range long enough to be killed."""
    return {
        **os.environ,
        **instance_env,
        "ADRI_LEDGER_URL": ledger_url,
        "ADRI_WAREHOUSE": str(tmp_path / "w.duckdb"),
        "ADRI_CORPUS": str(SAMPLE),
        "ADRI_BACKEND": "ollama",
        "ADRI_MODEL": "qwen-test",
        "ADRI_OLLAMA_HOSTS": host,
        "ADRI_SHARDS_PER_RUN": str(SHARDS_PER_RUN),
        "ADRI_CONCURRENCY": "1",
        # the killed worker's claims return to its retry after 5 s (by default, a document's budget)
        "ADRI_LEDGER_LEASE_S": "5",
    }


@contextmanager
def _dagster_services(env: dict[str, str], tmp_path: Path, port: int):
    """`dagster-daemon` and `dagster-webserver`, each in its own session so the whole process group is
    stopped at the end, even when the test fails midway; their output in tmp_path/logs."""
    logs = tmp_path / "logs"
    logs.mkdir()
    workspace = str(PROJECT_ROOT / "workspace.yaml")
    services = [
        subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", workspace],
            env=env,
            cwd=tmp_path,
            stdout=open(logs / "daemon.log", "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        ),
        subprocess.Popen(
            [str(BIN / "dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=open(logs / "webserver.log", "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        ),
    ]
    try:
        yield
    finally:
        for service in services:
            try:
                os.killpg(service.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for service in services:
            try:
                service.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(service.pid, signal.SIGKILL)


def _launch_when_the_webserver_answers(env: dict[str, str], port: int) -> None:
    """`adri launch` against the webserver once it answers: before that the launch would find nothing."""

    def answering():
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2).status == 200
        except OSError:
            return False

    _wait(answering, 180, "the Dagster webserver", every_s=1)
    launched = subprocess.run(
        [str(BIN / "adri"), "launch", "--dagster", f"http://127.0.0.1:{port}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert launched.returncode == 0, launched.stderr


def _shard_runs(instance):
    import dagster as dg

    return instance.get_run_records(dg.RunsFilter(job_name="classify_shards_job"))


def _kill_a_worker_mid_range(instance):
    """SIGKILL to one shard run's worker while another runs beside it, after an answer or two: what run
    monitoring must notice. The killed run and the time of the kill."""
    import dagster as dg

    def running_with_a_pid():
        started = [r.dagster_run for r in _shard_runs(instance) if r.dagster_run.status == dg.DagsterRunStatus.STARTED]
        with_pid = [(run, _worker_pid(instance, run.run_id)) for run in started]
        return [(run, pid) for run, pid in with_pid if pid] if len(started) >= 2 else None

    victim, pid = _wait(running_with_a_pid, 300, "two shard runs started at once")[0]
    time.sleep(2 * ANSWER_S)  # mid-range: an answer or two committed, more to come
    os.kill(pid, signal.SIGKILL)
    return victim, time.time()


def _results_run(instance):
    """The results' refresh once it has ended: it starts only after every run of the range and the retry."""
    import dagster as dg

    def results_built():
        runs = instance.get_runs(dg.RunsFilter(job_name="refresh_results_job"))
        done = [r for r in runs if r.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)]
        return done[0] if done else None

    return _wait(results_built, 600, "the results after the range's runs", every_s=1)


def test_a_range_as_runs_side_by_side_survives_a_killed_worker_and_ends_as_one_process_would(
    postgres_server, instance_env, tmp_path
):
    import dagster as dg

    ledger_url = postgres_server.url(postgres_server.new_database("ledger"))
    with ModelServerStub(responder=answer_from_request, delay=ANSWER_S) as stub:
        alone, documents = _one_process_run(tmp_path, stub.host)
        asked_alone = len(stub.chats())

        env = _range_env(instance_env, ledger_url, tmp_path, stub.host)
        port = free_port()
        with _dagster_services(env, tmp_path, port):
            _launch_when_the_webserver_answers(env, port)
            with dg.DagsterInstance.get() as instance:
                victim, killed_at = _kill_a_worker_mid_range(instance)
                assert _results_run(instance).status == dg.DagsterRunStatus.SUCCESS

                records = _shard_runs(instance)
                killed = instance.get_run_by_id(victim.run_id)
                retries = [
                    r.dagster_run for r in records if r.dagster_run.tags.get("dagster/parent_run_id") == victim.run_id
                ]
                materialized = instance.get_materialized_partitions(dg.AssetKey("classifications"))
                registered = instance.get_dynamic_partitions("document_shards")
                refreshes = instance.get_runs(dg.RunsFilter(job_name="refresh_results_job"))

        asked = Counter(document_text(chat) for chat in stub.chats()[asked_alone:])

    first_runs = [r for r in records if "dagster/parent_run_id" not in r.dagster_run.tags]
    retry_record = next(r for r in records if r.dagster_run.run_id == retries[0].run_id)
    print(
        f"\n{len(first_runs)} runs, {_most_at_once(records)} at once at most; killed worker noticed and "
        f"retried, the retry ended {retry_record.end_time - killed_at:.1f} s after the kill; "
        f"{sum(asked.values()) - documents} document(s) asked twice; {documents} documents"
    )
    assert len(first_runs) >= 4 and _most_at_once(records) >= 2
    assert killed.status == dg.DagsterRunStatus.FAILURE and len(retries) == 1
    assert retries[0].status == dg.DagsterRunStatus.SUCCESS
    assert len(refreshes) == 1  # the results were built once, after every run and the retry
    assert materialized == set(registered)
    # every document answered; asked twice only if its request was at the model when its worker died
    assert len(asked) == documents and sum(asked.values()) - documents <= 1
    assert _values(tmp_path / "w.duckdb") == _values(alone.warehouse)
