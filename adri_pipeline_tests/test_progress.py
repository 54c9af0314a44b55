"""Progress in a log file (stderr not a terminal): whole lines, never a carriage return."""

import subprocess
import sys

import pytest

from adri_pipeline.config import PILOT_CODEBOOK, SAMPLE_CORPUS


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_a_classification_logged_to_a_file_writes_lines_not_carriage_returns(tmp_path):
    """Failed before: the classify bar wrote one carriage-return update per document into the file."""
    log = tmp_path / "run.log"
    with log.open("w") as stderr:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "adri_pipeline.cli",
                "classify",
                "--corpus",
                str(SAMPLE_CORPUS),
                "--codebook",
                str(PILOT_CODEBOOK),
                "--backend",
                "embedded",
                "--limit",
                "4",
                "--warehouse",
                str(tmp_path / "w.duckdb"),
            ],
            stderr=stderr,
            stdout=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, log.read_text()
    written = log.read_text()
    assert "\r" not in written
    assert written.splitlines()[-1].startswith("classifying: 4/4 doc [")
