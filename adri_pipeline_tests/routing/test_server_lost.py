"""A model server that goes away in the middle of `adri routing run` (the README's LLM-baseline run):
the run ends with one line naming the candidate and the server, what was kept and how to go on, never
a traceback."""

from __future__ import annotations

import threading

from adri_pipeline.cli import main
from loopback.model_server import ModelServerStub


def test_a_server_that_stops_mid_run_ends_it_with_one_line(tmp_path, capsys, monkeypatch, stop_handlers):
    asked = []

    def going_away(request):
        asked.append(request)
        if len(asked) == 3:  # the check's probe, then two questions: the server stops
            stub.drop_after = 0  # what is in flight is cut, as a killed server's connections are
            threading.Thread(target=stub.__exit__, args=(None, None, None)).start()
        return {"A": -0.2, "B": -1.9}

    with ModelServerStub(models=("qwen-test",)) as stub:
        stub.next_token = going_away
        monkeypatch.setenv("ADRI_OPENAI_HOSTS", stub.host + "/v1")
        code = main(
            [
                "routing",
                "run",
                "--candidates",
                "openai:qwen-test",
                "--runs",
                "0",
                "--out-of-source",
                "none",
                "--extra-training",
                "none",
                "--limite-llm",
                "20",
                "--warehouse",
                str(tmp_path / "w.duckdb"),
            ]
        )
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert "Traceback" not in err
    line = err.splitlines()[-1]  # above it: the run's progress lines
    assert line.startswith("error: candidate openai:qwen-test: the server at " + stub.host), line
    assert "nothing of this run was written" in line and "then run the same command again" in line, line
    assert not (tmp_path / "routing" / "sample" / "report.md").exists()
