"""The fault suite: real processes, loopback only, bounded in time. Whatever breaks, every answer that
follows the codebook is kept once, at most the documents in flight are redone, and bad input leaves
every stored table byte-identical."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from adri_pipeline_tests.conftest import PILOT, SAMPLE
from loopback.fakes import answer_from_request, document_text
from loopback.model_server import ModelServerStub

N = 23  # documents with an abstract in the sample


def classify(
    stub_host: str,
    warehouse: Path,
    *extra: str,
    fault: str | None = None,
    corpus: Path = SAMPLE,
    codebook: Path = PILOT,
    results_every: int = 5,
) -> subprocess.Popen:
    env = {**os.environ, "ADRI_OLLAMA_HOSTS": stub_host, "ADRI_RESULTS_EVERY_DOCUMENTS": str(results_every)}
    env.pop("ADRI_FAULT", None)
    if fault:
        env["ADRI_FAULT"] = fault
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adri_pipeline.cli",
            "classify",
            "--corpus",
            str(corpus),
            "--codebook",
            str(codebook),
            "--backend",
            "ollama",
            "--model",
            "qwen-test",
            "--warehouse",
            str(warehouse),
            *extra,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(condition, timeout=60, what="condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def ledger(warehouse: Path) -> list[str]:
    """Documents in the ledger; none when the process died before (or while) creating it: a kill right
    after the digest request can land inside the schema creation."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        if not con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'ledger'").fetchall():
            return []
        return [row[0] for row in con.execute("SELECT doc_id FROM ledger").fetchall()]


def table_hashes(warehouse: Path) -> dict[str, str]:
    """A hash of every table's content, to prove that nothing stored changed."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        return {
            t: hashlib.sha256(repr(con.execute(f'SELECT * FROM "{t}" ORDER BY ALL').fetchall()).encode()).hexdigest()
            for t in tables
        }


def resume_and_check(stub: ModelServerStub, warehouse: Path, kept_before: list[str]) -> None:
    """Rerun to the end: nothing kept is asked again, every document ends in the results once."""
    asked_before = len(stub.chats())
    process = classify(stub.host, warehouse)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    texts = {d: t for d, t in _texts().items()}
    asked_again = {document_text(r) for r in stub.chats()[asked_before:]}
    assert not asked_again & {texts[d] for d in kept_before}  # no answer kept was paid for twice
    stored = ledger(warehouse)
    assert sorted(stored) == sorted(set(stored)) and set(stored) == set(texts)  # each once, none lost
    with duckdb.connect(str(warehouse.with_name(warehouse.stem + "_snapshot.duckdb")), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT doc_id) FROM classification_documents").fetchall()[0][0] == N
    assert not list(warehouse.parent.glob("*.tmp*"))  # no half-written snapshot left behind


def _texts() -> dict[str, str]:
    from adri_pipeline.classification.corpus import load_corpus

    documents = load_corpus(SAMPLE).documents
    return dict(zip(documents["doc_id"], documents["text"]))


@pytest.fixture
def stub():
    with ModelServerStub(responder=answer_from_request) as server:
        yield server


# one point in the front door, the other four in the slow suite (each is two runs of adri, ~7 s)
@pytest.mark.parametrize(
    "point",
    [
        "mid_run",
        *(
            pytest.param(p, marks=pytest.mark.slow)
            for p in ("startup", "mid_retry", "before_results", "during_snapshot")
        ),
    ],
)
def test_kill_9_at_every_point_then_resume_keeps_each_answer_once(stub, tmp_path, point):
    warehouse = tmp_path / "wh" / "adri.duckdb"
    stub.delay = 0.03
    if point == "mid_retry":
        stub.script = [{"content": answer_from_request_for_retry()}]  # the first document needs a retry
    fault = point if point in ("before_results", "during_snapshot") else None
    process = classify(stub.host, warehouse, fault=fault)
    if point == "startup":
        wait_until(lambda: any(path == "/api/tags" for path, _ in stub.requests), what="the digest request")
        process.send_signal(signal.SIGKILL)
    elif point == "mid_run":
        wait_until(lambda: len(stub.chats()) >= 8, what="eight answers")
        process.send_signal(signal.SIGKILL)
    elif point == "mid_retry":
        wait_until(lambda: any(len(r["messages"]) == 4 for r in stub.chats()), what="a retry request")
        process.send_signal(signal.SIGKILL)
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL
    kept = ledger(warehouse) if warehouse.exists() else []
    if point == "before_results":
        assert len(kept) == N  # everything answered was committed before the results stage
    if point == "during_snapshot":
        assert len(kept) >= 5 and list(warehouse.parent.glob("*.tmp*"))  # died inside the first partial publish
    stub.delay = 0.0
    resume_and_check(stub, warehouse, kept)


def answer_from_request_for_retry() -> str:
    return "isto não é JSON"


@pytest.mark.slow
def test_the_server_killed_mid_request_and_restarted_loses_nothing(tmp_path):
    port_file = tmp_path / "port"

    def start_server(port: int = 0) -> subprocess.Popen:
        port_file.unlink(missing_ok=True)
        server = subprocess.Popen([sys.executable, "-m", "loopback.model_server", str(port_file), "0.2", str(port)])
        wait_until(lambda: port_file.exists() and port_file.read_text(), what="the server's port")
        return server

    server = start_server()
    host = port_file.read_text()
    warehouse = tmp_path / "wh" / "adri.duckdb"
    process = classify(host, warehouse)
    snapshot = warehouse.with_name("adri_snapshot.duckdb")
    wait_until(snapshot.exists, timeout=120, what="the first partial results (5 documents in)")
    server.send_signal(signal.SIGKILL)
    server.wait()
    time.sleep(0.5)
    server = start_server(int(host.rsplit(":", 1)[1]))  # back on the same port within the retry window
    try:
        out, err = process.communicate(timeout=180)
    finally:
        server.kill()
        server.wait()
    assert process.returncode == 0, err
    assert "dropped the request" in err and "classified now" in out
    assert sorted(ledger(warehouse)) == sorted(_texts())


@pytest.mark.slow
def test_a_server_that_stays_away_stops_the_run_with_results_for_what_was_done(stub, tmp_path):
    warehouse = tmp_path / "wh" / "adri.duckdb"
    stub.drop_after = 6
    process = classify(stub.host, warehouse)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1 and "went away during the run" in out and "Traceback" not in err
    with duckdb.connect(str(warehouse.with_name("adri_snapshot.duckdb")), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT doc_id) FROM classification_values").fetchall()[0][0] == 6


@pytest.mark.slow
def test_a_503_storm_is_retried_and_counted(stub, tmp_path):
    stub.script = [{"status": 503, "error": "server busy"}] * 3  # backoff 0.5 + 1 + 2 s, then an answer
    process = classify(stub.host, tmp_path / "w.duckdb", "--limit", "2")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "classified now 2, failed 0, model calls 2 (5 requests sent)" in out


def test_a_503_storm_that_does_not_end_fails_the_document_with_the_reason(stub, tmp_path, warehouse, pilot):
    from adri_pipeline.classification.backends.served import ServedBackend
    from adri_pipeline.classification.corpus import load_corpus
    from adri_pipeline.classification.runner import classify_corpus

    stub.script = [{"status": 503, "error": "server busy"}] * 6
    backend = ServedBackend("ollama", "qwen-test", [stub.host], backoff_s=0.01)
    report = classify_corpus(load_corpus(SAMPLE).documents.head(1), pilot, backend, warehouse)
    assert report.failed == [("sample-001", f"{stub.host} answered 503: server busy")]
    assert (report.classified, report.requests) == (0, 6)  # the first try and 5 retries


def test_every_document_timing_out_fails_the_run_and_names_the_setting(stub, tmp_path):
    stub.delay = 1.5
    env_process = classify(stub.host, tmp_path / "w.duckdb", "--limit", "2")
    env_process.kill()
    env_process.wait()
    env = {**os.environ, "ADRI_OLLAMA_HOSTS": stub.host, "ADRI_REQUEST_TIMEOUT_S": "0.5"}
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "adri_pipeline.cli",
            "classify",
            "--corpus",
            str(SAMPLE),
            "--backend",
            "ollama",
            "--model",
            "qwen-test",
            "--warehouse",
            str(tmp_path / "w2.duckdb"),
            "--limit",
            "2",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 1
    assert "timeout of 0.5 s (ADRI_REQUEST_TIMEOUT_S)" in process.stdout and "(2 requests sent)" in process.stdout


@pytest.mark.parametrize("content", ['{"abordagem": {"evidencia": "trunc', '{"thought": "vou pensar"}', "[]"])
def test_malformed_truncated_and_schema_ignoring_answers_are_retried_then_listed(stub, tmp_path, content):
    stub.responder = lambda request: content
    warehouse = tmp_path / "w.duckdb"
    process = classify(stub.host, warehouse, "--limit", "1")
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 1 and "model calls 2" in out
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ledger").fetchall()[0][0] == 0
        [(doc, reason)] = con.execute("SELECT doc_id, reason FROM classification_failures").fetchall()
    assert doc == "sample-001" and reason


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_an_analyst_holding_the_snapshot_does_not_stop_a_run(stub, tmp_path):
    warehouse = tmp_path / "wh" / "adri.duckdb"
    first = classify(stub.host, warehouse, "--limit", "3")
    first.communicate(timeout=120)
    analyst = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb,sys,time; c=duckdb.connect(sys.argv[1], read_only=True); "
            "print(c.execute('select count(*) from ledger').fetchall()[0][0], flush=True); time.sleep(60)",
            str(warehouse.with_name("adri_snapshot.duckdb")),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert analyst.stdout.readline().strip() == "3"
        process = classify(stub.host, warehouse)
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    finally:
        analyst.kill()
        analyst.wait()
    with duckdb.connect(str(warehouse.with_name("adri_snapshot.duckdb")), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ledger").fetchall()[0][0] == N  # republished under the analyst


@pytest.mark.slow
def test_two_runs_at_once_on_one_warehouse_the_second_is_told_who_holds_it(stub, tmp_path):
    warehouse = tmp_path / "wh" / "adri.duckdb"
    stub.delay = 1.0  # the first run lasts ~12 s: longer than the second one's start-up, even on a busy machine
    first = classify(stub.host, warehouse)
    wait_until(lambda: len(stub.chats()) >= 2, what="the first run to start")
    env = {**os.environ, "ADRI_OLLAMA_HOSTS": stub.host}
    second = subprocess.run(
        [
            sys.executable,
            "-c",
            "from adri_pipeline.cli import main; import sys; "
            "from adri_pipeline import warehouse; warehouse.Warehouse.__init__.__defaults__ = (1.0,); "
            "sys.exit(main(sys.argv[1:]))",
            "classify",
            "--corpus",
            str(SAMPLE),
            "--backend",
            "ollama",
            "--model",
            "qwen-test",
            "--warehouse",
            str(warehouse),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert second.returncode == 2 and f"process {first.pid}" in second.stderr
    assert "is writing this warehouse" in second.stderr and "Wait for that run to end or stop it" in second.stderr
    assert sorted(ledger(warehouse)) == sorted(_texts())


@pytest.mark.slow
def test_bad_input_files_leave_every_stored_table_byte_identical(stub, tmp_path):
    warehouse = tmp_path / "wh" / "adri.duckdb"
    classify(stub.host, warehouse, "--limit", "5").communicate(timeout=120)
    before = table_hashes(warehouse)
    bad_corpus = tmp_path / "bad.jsonl"
    bad_corpus.write_text('{"id": "x1", "abstract": "ok"}\n{not json\n', encoding="utf-8")
    empty_corpus = tmp_path / "empty.csv"
    empty_corpus.write_text("id,title,abstract\n", encoding="utf-8")
    bad_codebook = tmp_path / "bad.yaml"
    bad_codebook.write_text("name: x\nversion: 1\n", encoding="utf-8")
    clash = tmp_path / "clash.jsonl"
    clash.write_text(json.dumps({"id": "sample-001", "title": "outro", "abstract": "outro texto"}) + "\n")
    for corpus, codebook in ((bad_corpus, PILOT), (empty_corpus, PILOT), (SAMPLE, bad_codebook), (clash, PILOT)):
        process = classify(stub.host, warehouse, corpus=corpus, codebook=codebook)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 2 and err.startswith("error: "), err
        assert "Traceback" not in err
    assert table_hashes(warehouse) == before


@pytest.mark.slow
def test_two_hosts_one_killed_and_restarted_later_the_run_never_stops_and_loses_nothing(tmp_path):
    """kill -9 of one of two model hosts mid-run, restarted on its port seconds later (after the time a
    single host's retries used to last): the run goes on on the other host, the killed one rejoins,
    and the ledger holds every document once."""

    def start_server(port_file: Path, port: int = 0) -> subprocess.Popen:
        port_file.unlink(missing_ok=True)
        server = subprocess.Popen([sys.executable, "-m", "loopback.model_server", str(port_file), "2.0", str(port)])
        wait_until(lambda: port_file.exists() and port_file.read_text(), what="the server's port")
        return server

    a_file, b_file = tmp_path / "a.port", tmp_path / "b.port"
    a, b = start_server(a_file), start_server(b_file)
    a_host, b_host = a_file.read_text(), b_file.read_text()
    warehouse = tmp_path / "wh" / "adri.duckdb"
    process = classify(f"{a_host},{b_host}", warehouse)
    try:
        wait_until(
            lambda: warehouse.with_name("adri_snapshot.duckdb").exists(),
            timeout=120,
            what="the first partial results (5 documents in)",
        )
        a.send_signal(signal.SIGKILL)
        a.wait()
        time.sleep(9)  # longer than one host's three reconnections (1 + 2 + 4 s) used to allow
        a = start_server(a_file, int(a_host.rsplit(":", 1)[1]))
        out, err = process.communicate(timeout=180)
    finally:
        for server in (a, b):
            server.kill()
            server.wait()
    assert process.returncode == 0, err
    assert "its documents go to the hosts that answer" in err and "rejoins the run" in err
    assert sorted(ledger(warehouse)) == sorted(_texts()) and len(ledger(warehouse)) == N


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_kill_9_in_the_final_publish_then_a_cached_rerun_publishes_the_results(stub, tmp_path):
    """Failed before: the previous snapshot (10 documents) stayed through every cached rerun, which took
    the existing snapshot file for its own; the snapshot's temporary file stayed too."""
    warehouse = tmp_path / "wh" / "adri.duckdb"
    snapshot = warehouse.with_name("adri_snapshot.duckdb")
    assert classify(stub.host, warehouse, "--limit", "10").wait(timeout=120) == 0
    process = classify(stub.host, warehouse, fault="during_snapshot", results_every=1000)  # the final publish
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL and list(warehouse.parent.glob("*.tmp*"))
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT doc_id) FROM classification_documents").fetchone()[0] == 10
    asked = len(stub.chats())
    rerun = classify(stub.host, warehouse)
    assert rerun.wait(timeout=120) == 0 and len(stub.chats()) == asked  # cached: nothing asked
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT doc_id) FROM classification_documents").fetchone()[0] == N
    assert not list(warehouse.parent.glob("*.tmp*"))


@pytest.mark.slow  # end to end, over 6 s: the slow suite (.ci/run runs it)
def test_a_second_classify_on_a_warehouse_in_use_refuses_at_once_naming_the_run_and_asking_nothing(tmp_path):
    """Failed before: a second `adri classify` on the warehouse of a running one asked the model for
    the same documents (208 calls for 200) and then died on DuckDB's lock with a traceback."""
    warehouse = tmp_path / "w.duckdb"
    with (
        ModelServerStub(responder=answer_from_request, delay=0.5) as busy,
        ModelServerStub(responder=answer_from_request) as other,
    ):
        first = classify(busy.host, warehouse)
        try:
            wait_until(busy.chats, what="the first run's first request")
            second = classify(other.host, warehouse)
            _, err = second.communicate(timeout=120)
            assert second.returncode == 2, err
            assert f"process {first.pid}, started 20" in err and "is writing this warehouse" in err
            assert "Traceback" not in err
            assert other.requests == []  # not a request: no model list, no chat
        finally:
            first.kill()  # kill -9: the kernel releases the claim with the process
            first.wait()
        again = classify(other.host, warehouse)
        _, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
