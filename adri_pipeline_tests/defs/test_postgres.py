"""The scale-out path run for real: a Dagster instance on a real PostgreSQL server (loopback port),
deploy/dagster.postgres.yaml as the instance configuration, a range run stopped midway and resumed."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from adri_pipeline.config import PROJECT_ROOT
from adri_pipeline_tests.conftest import SAMPLE

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(*command: str) -> subprocess.CompletedProcess:
    runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*runner, *command], check=True, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def postgres():
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not binaries:
        pytest.skip("PostgreSQL server not installed (Debian package postgresql; .ci/run installs it)")
    pytest.importorskip("dagster_postgres")
    folder = Path(tempfile.mkdtemp(prefix="adri-pg-"))  # the server's user must reach it (pytest's is root-only)
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    port = _free_port()
    _as_postgres(f"{binaries[-1]}/initdb", "-D", str(data), "--auth=trust", "-U", "postgres")
    _as_postgres(f"{binaries[-1]}/pg_ctl", "-D", str(data), "-w", "-l", str(folder / "log"), "-o",
                 f"-p {port} -c listen_addresses=127.0.0.1 -k {folder}", "start")
    try:
        _as_postgres(f"{binaries[-1]}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "dagster")
        yield port
    finally:
        _as_postgres(f"{binaries[-1]}/pg_ctl", "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def test_a_range_run_on_postgres_stops_midway_resumes_and_queues_one_classification_run(
        postgres, tmp_path, monkeypatch, ollama_stub):
    import dagster as dg

    from adri_pipeline.defs.in_process import materialize_graph
    from adri_pipeline.defs.resources import AdriSettings

    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "deploy" / "dagster.postgres.yaml", home / "dagster.yaml")
    for key, value in {"DAGSTER_HOME": str(home), "DAGSTER_PG_USERNAME": "postgres", "DAGSTER_PG_PASSWORD": "",
                       "DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_DB": "dagster",
                       "DAGSTER_PG_PORT": str(postgres)}.items():
        monkeypatch.setenv(key, value)
    adri = AdriSettings(warehouse=str(tmp_path / "w.duckdb"), backend="ollama", model="qwen-test",
                        ollama_hosts=ollama_stub.host, corpus=str(SAMPLE))
    with dg.DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        limits = instance.run_coordinator.get_run_queue_config().tag_concurrency_limits
        assert {"key": "dagster/job_name", "value": "classify_documents_job", "limit": 1} in limits

        ollama_stub.fail_after = 9  # the model disappears after 9 answers: the range run stops
        first = materialize_graph(instance, adri, raise_on_error=False, jobs=("classify",))
        assert not first.classify.success
        key = dg.AssetKey("classifications")
        assert 0 < len(instance.get_materialized_partitions(key)) <= 9  # the shards of the 9 answered

        ollama_stub.fail_after = None
        second = materialize_graph(instance, adri, jobs=("classify", "results"))
        shards = instance.get_dynamic_partitions("document_shards")
        assert second.success and instance.get_materialized_partitions(key) == set(shards) and len(shards) <= 23
