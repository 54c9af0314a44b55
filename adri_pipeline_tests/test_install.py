"""The package works installed, not only from the source checkout: `pip install .` (not editable)
carries the codebook, the contract schemas and the sample data, and `adri demo` run in an empty
folder writes there. Slow: builds the wheel and runs the demo."""

import os
import subprocess
import sys

import duckdb
import pytest

from adri_pipeline.config import PROJECT_ROOT

pytestmark = pytest.mark.slow


def test_installed_package_runs_the_demo_in_an_empty_folder(tmp_path):
    target, empty = tmp_path / "site", tmp_path / "empty"
    empty.mkdir()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(PROJECT_ROOT)],
        check=True,
        capture_output=True,
    )
    assert (target / "adri_pipeline" / "bundled" / "codebooks" / "pilot.yaml").is_file()
    # the installed copy, not the checkout, answers (dependencies come from this environment)
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("DAGSTER_HOME", None)
    where = subprocess.run(
        [sys.executable, "-c", "import adri_pipeline; print(adri_pipeline.__file__)"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(target))
    demo = subprocess.run(
        [sys.executable, "-m", "adri_pipeline.cli", "demo"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    snapshot = empty / "data" / "demo" / "adri_snapshot.duckdb"  # never the default warehouse real runs use
    assert not (empty / "data" / "warehouse" / "adri.duckdb").exists()
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT doc_id) FROM classification_values").fetchone()[0] == 23
    assert (empty / ".dagster_home").is_dir()
    assert not (target / "adri_pipeline" / "data").exists()  # nothing written into the installed package
