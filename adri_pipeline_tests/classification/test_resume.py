"""kill -9 loses nothing and redoes nothing; Ctrl+C writes the partial result."""

import os
import signal
import subprocess
import sys
import time

import duckdb

from adri_pipeline_tests.classification.helpers import run
from adri_pipeline_tests.conftest import PILOT, SAMPLE
from loopback.fakes import document_text


def start_classify(stub, warehouse):
    env = {**os.environ, "OLLAMA_HOST": stub.host, "ADRI_OLLAMA_HOSTS": stub.host}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adri_pipeline.cli",
            "classify",
            "--corpus",
            str(SAMPLE),
            "--codebook",
            str(PILOT),
            "--backend",
            "ollama",
            "--model",
            "qwen-test",
            "--warehouse",
            str(warehouse.path),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_chats(stub, n, timeout=60):
    deadline = time.monotonic() + timeout
    while len(stub.chats()) < n:
        assert time.monotonic() < deadline, "classification never reached the server"
        time.sleep(0.02)


def stored_counts(warehouse) -> tuple[int, int, list[tuple]]:
    """(ledger rows, documents with results, (stopped, model_calls) of each run) after a stop."""
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        return (
            con.execute("SELECT count(*) FROM ledger").fetchone()[0],
            con.execute("SELECT count(DISTINCT doc_id) FROM classification_documents").fetchone()[0],
            con.execute("SELECT stopped, model_calls FROM classification_runs").fetchall(),
        )


def ledger_docs(warehouse):
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        return {row[0] for row in con.execute("SELECT doc_id FROM ledger").fetchall()}


def test_kill_9_mid_run_then_rerun_loses_nothing_and_repeats_nothing(ollama_stub, sample_corpus, pilot, warehouse):
    ollama_stub.delay = 0.1
    process = start_classify(ollama_stub, warehouse)
    wait_for_chats(ollama_stub, 8)
    process.send_signal(signal.SIGKILL)
    process.wait()
    answered_before_kill = len(ollama_stub.chats())
    committed = ledger_docs(warehouse)
    assert answered_before_kill - 2 <= len(committed) <= answered_before_kill  # at most those in flight (slot + queued)

    ollama_stub.delay = 0.0
    before = len(ollama_stub.chats())
    report = run(ollama_stub, sample_corpus, pilot, warehouse)
    asked_again = {document_text(r) for r in ollama_stub.chats()[before:]}
    texts = dict(zip(sample_corpus.documents["doc_id"], sample_corpus.documents["text"]))
    assert not asked_again & {texts[d] for d in committed}  # nothing redone
    assert report.cached == len(committed)
    assert ledger_docs(warehouse) == set(texts)  # nothing lost


def test_ctrl_c_writes_the_partial_result(ollama_stub, warehouse):
    ollama_stub.delay = 0.1
    process = start_classify(ollama_stub, warehouse)
    wait_for_chats(ollama_stub, 5)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stdout
    ledger, results, _ = stored_counts(warehouse)
    assert 4 <= ledger < 23 and results == ledger
    assert warehouse.snapshot_path.exists()


def test_many_ctrl_c_in_a_burst_still_publish_once(ollama_stub, warehouse):
    """Four Ctrl+C within a fraction of a second left the ledger written but no results, no snapshot and no
    runs row: every signal after the first interrupted the stop's own publishing."""
    ollama_stub.delay = 0.1
    process = start_classify(ollama_stub, warehouse)
    wait_for_chats(ollama_stub, 5)
    for _ in range(4):
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
    alive_after_the_burst = process.poll() is None  # else the stop was over before the last signals
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted (Ctrl+C)" not in stderr and "Traceback" not in stderr  # no signal escaped the stop
    if alive_after_the_burst:
        assert "already stopping" in stderr
    ledger, results, runs = stored_counts(warehouse)
    # how many answers were committed depends on the load: the second signal of the burst gives up the
    # answers still at the model (a loaded run, 3 test workers on 2 cores, had 3 of the 5 asked, not
    # the 4 this once assumed); what must hold is that what was committed is published once
    assert ledger >= 1 and results == ledger
    assert warehouse.snapshot_path.exists()
    assert len(runs) == 1 and runs[0][0].startswith("interrupted") and runs[0][1] is not None


def test_a_second_ctrl_c_stops_waiting_for_a_slow_model_and_still_publishes(ollama_stub, warehouse):
    """The first Ctrl+C waits for the answers already at the model; the second gives them up (they are
    redone next run), and the results of what was committed are still written once."""
    ollama_stub.delay = 0.05
    process = start_classify(ollama_stub, warehouse)
    wait_for_chats(ollama_stub, 5)
    ollama_stub.delay = 30.0  # the answers now in flight would take half a minute
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    began = time.monotonic()
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=20)
    assert time.monotonic() - began < 15 and process.returncode == 130, stderr
    ledger, results, runs = stored_counts(warehouse)
    assert results == ledger >= 4
    assert len(runs) == 1 and "second interrupt" in runs[0][0]


def test_after_kill_9_the_first_partial_results_of_the_resumed_run_hold_what_was_committed_before(
    ollama_stub, warehouse, tmp_path
):
    """ADR 0011: "a primeira regravação parcial mostrou 256 (206 + 50 novos)". The resumed run's first
    republished results held only its own new answers until its end."""
    from adri_pipeline.classification.service import classify_corpus_file
    from adri_pipeline.config import Settings

    ollama_stub.delay = 0.1
    process = start_classify(ollama_stub, warehouse)
    wait_for_chats(ollama_stub, 8)
    process.send_signal(signal.SIGKILL)
    process.wait()
    committed = len(ledger_docs(warehouse))
    assert committed >= 5

    ollama_stub.delay = 0.0
    settings = Settings(
        warehouse=warehouse.path,
        corpus=SAMPLE,
        codebook=PILOT,
        backend="ollama",
        model="qwen-test",
        ollama_hosts=[ollama_stub.host],
        results_every_documents=5,
    )
    seen = []

    def progress(outcome, total):
        if warehouse.snapshot_path.exists() and not seen:
            with duckdb.connect(str(warehouse.snapshot_path), read_only=True) as con:
                seen.append(con.execute("SELECT count(DISTINCT doc_id) FROM classification_documents").fetchone()[0])

    classify_corpus_file(settings, progress=progress)
    assert seen and seen[0] >= committed + 5  # the committed ones and the first five new (206 + 50)
