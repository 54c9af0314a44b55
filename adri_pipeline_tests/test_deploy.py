"""The deployment files in deploy/ are what their tools accept: the Compose file against the Compose
Specification's schema (check-jsonschema's vendored copy; `docker compose` is not installed here), the
Dagster instance files against Dagster's instance configuration schema. The one-machine instance is
started for real by defs/test_scale_out.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from adri_pipeline.config import PROJECT_ROOT

DEPLOY = PROJECT_ROOT / "deploy"


def _compose_errors(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_compose_file_follows_the_compose_specification(tmp_path):
    assert _compose_errors(DEPLOY / "docker-compose.yaml").returncode == 0
    broken = yaml.safe_load((DEPLOY / "docker-compose.yaml").read_text(encoding="utf-8"))
    broken["services"]["daemon"]["restart_policy"] = "always"  # not a service key: must be refused
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(broken), encoding="utf-8")
    assert _compose_errors(tmp_path / "compose.yaml").returncode != 0


@pytest.mark.parametrize("name", ["dagster.yaml", "dagster.docker.yaml"])
def test_the_instance_files_are_valid_dagster_instance_configuration(tmp_path, monkeypatch, name):
    from dagster._core.instance.config import dagster_instance_config

    for key in ("DAGSTER_PG_USERNAME", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_HOST", "DAGSTER_PG_DB", "DAGSTER_PG_PORT"):
        monkeypatch.setenv(key, "5432" if key.endswith("PORT") else "x")
    shutil.copy(DEPLOY / name, tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    assert config["run_retries"]["enabled"] and config["run_monitoring"]["enabled"]
    assert config["concurrency"]["pools"]["default_limit"] == 1
