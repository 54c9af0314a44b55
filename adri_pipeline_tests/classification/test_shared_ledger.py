"""The shared ledger on a real PostgreSQL server: runs over shards commit there and never open the
warehouse; results built from it into DuckDB are those of a one-process run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import duckdb
import psycopg
import pytest

from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus_reading import register_corpus
from adri_pipeline.classification.ledger import LEDGER_COLUMNS
from adri_pipeline.classification.publishing import refresh_results
from adri_pipeline.classification.service import (
    NoSharedLedger,
    classify_corpus_file,
    classify_shards,
    pull_shared_ledger,
    shared_ledger,
)
from adri_pipeline.classification.shards import shard_ranges, shards_of
from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse
from adri_pipeline.warehouse.shared import SharedLedger, SharedLedgerUnreachable, redacted
from adri_pipeline_tests.conftest import SAMPLE
from loopback.fakes import document_text


def _settings(tmp_path, name: str, stub, **more) -> Settings:
    return Settings.load(
        warehouse=tmp_path / name / "w.duckdb",
        corpus=SAMPLE,
        backend="ollama",
        model="qwen-test",
        ollama_hosts=[stub.host],
        **more,
    )


def _values(warehouse: Warehouse):
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        return con.execute(
            "SELECT doc_id, variable, value, evidencia, audit_status, evidence_start, cache_key "
            "FROM classification_values ORDER BY ALL"
        ).fetchall()


def test_runs_over_shards_commit_to_the_shared_ledger_and_the_pulled_results_equal_a_one_process_run(
    tmp_path, ollama_stub, ledger_url
):
    alone = _settings(tmp_path, "alone", ollama_stub)
    classify_corpus_file(alone)
    asked_alone = len(ollama_stub.chats())

    settings = _settings(tmp_path, "shared", ollama_stub, ledger_url=ledger_url)
    warehouse = Warehouse(settings.warehouse)
    corpus = register_corpus(settings, warehouse)
    shards = shards_of(corpus.documents["doc_id"])
    ranges = shard_ranges(shards, 5)
    assert len(ranges) >= 3
    before = len(ollama_stub.chats())
    mtime = warehouse.path.stat().st_mtime_ns
    reports = [classify_shards(RunContext.load(settings), part, origin="test") for part in ranges]
    assert warehouse.path.stat().st_mtime_ns == mtime  # the runs never wrote the warehouse
    assert sum(r.classified for r in reports) == corpus.documents.height
    assert len(ollama_stub.chats()) - before == asked_alone  # nothing asked twice

    pulled = pull_shared_ledger(settings, warehouse)
    assert sorted(pulled) == sorted(corpus.documents["doc_id"].to_list())
    assert pull_shared_ledger(settings, warehouse) == []  # the next pull starts where this one ended
    from adri_pipeline.classification.codebook import load_codebook
    from adri_pipeline.classification.service import recorded_model

    refresh_results(warehouse, load_codebook(settings.codebook), recorded_model(warehouse))
    assert _values(warehouse) == _values(Warehouse(alone.warehouse))

    again = classify_shards(
        RunContext.load(settings), shards, origin="test"
    )  # a rerun finds everything in the shared ledger
    assert again.cached == corpus.documents.height and again.classified == 0


def test_a_pull_sees_a_transaction_that_began_before_it_and_committed_after(tmp_path, ledger_url):
    """A sequence-number watermark would skip an answer whose transaction committed after a later one
    was pulled; the transaction horizon does not."""
    shared = SharedLedger(ledger_url)
    warehouse = Warehouse(tmp_path / "w.duckdb")
    row = {c: None for c in LEDGER_COLUMNS}

    slow = psycopg.connect(ledger_url)
    with shared.connect():
        pass  # schema
    slow.execute("INSERT INTO ledger (cache_key, doc_id) VALUES ('slow', 'd-slow')")  # open, not committed
    with shared.writer(list(LEDGER_COLUMNS)) as commit:
        commit({**row, "cache_key": "fast", "doc_id": "d-fast"})
    assert shared.pull_into(warehouse, list(LEDGER_COLUMNS)) == ["d-fast"]
    slow.commit()
    slow.close()
    assert "d-slow" in shared.pull_into(warehouse, list(LEDGER_COLUMNS))
    with duckdb.connect(str(warehouse.path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ledger").fetchone()[0] == 2


def test_a_run_killed_mid_range_keeps_its_committed_answers_and_the_rerun_asks_only_the_rest(
    tmp_path, ollama_stub, ledger_url
):
    settings = _settings(tmp_path, "kill", ollama_stub, ledger_url=ledger_url, ledger_lease_s=2.0)
    corpus = register_corpus(settings, Warehouse(settings.warehouse))
    ollama_stub.delay = 0.3
    # the killed worker's claims hold 2 s: the rerun takes its documents over once they expire
    env = {
        **os.environ,
        "ADRI_LEDGER_URL": ledger_url,
        "ADRI_LEDGER_LEASE_S": "2",
        "ADRI_BACKEND": "ollama",
        "ADRI_MODEL": "qwen-test",
        "ADRI_OLLAMA_HOSTS": ollama_stub.host,
        "ADRI_CORPUS": str(SAMPLE),
        "ADRI_WAREHOUSE": str(settings.warehouse),
    }
    shards = shards_of(corpus.documents["doc_id"])
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from adri_pipeline.classification.service import "
            "classify_shards; from adri_pipeline.classification.context import RunContext; "
            "from adri_pipeline.config import Settings; "
            "classify_shards(RunContext.load(Settings()), sys.argv[1:], origin='test')",
            *shards,
        ],
        env=env,
    )
    shared = shared_ledger(settings)
    deadline = time.monotonic() + 60
    with shared.connect() as con:
        while con.execute("SELECT count(*) FROM ledger").fetchone()[0] < 5 and time.monotonic() < deadline:
            con.commit()
            time.sleep(0.1)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    with shared.connect() as con:
        committed = {row[0] for row in con.execute("SELECT doc_id FROM ledger").fetchall()}
    assert 5 <= len(committed) < corpus.documents.height
    texts = dict(zip(corpus.documents["doc_id"], corpus.documents["text"]))
    ollama_stub.delay = 0
    start = len(ollama_stub.chats())
    rerun = classify_shards(RunContext.load(settings), shards, origin="test")
    assert rerun.cached == len(committed) and rerun.cached + rerun.classified == corpus.documents.height
    asked_again = [document_text(chat) for chat in ollama_stub.chats()[start:]]
    assert not set(asked_again) & {texts[d] for d in committed}  # no committed answer is asked for again


def test_no_shared_ledger_and_an_unreachable_one_are_clear_errors(tmp_path, ollama_stub):
    with pytest.raises(NoSharedLedger, match="ADRI_LEDGER_URL"):
        classify_shards(RunContext.load(_settings(tmp_path, "none", ollama_stub)), ["shard-000"], origin="test")
    url = "postgresql://adri:secret@127.0.0.1:9/adri"
    with pytest.raises(SharedLedgerUnreachable, match="127.0.0.1:9") as raised:
        SharedLedger(url).known(["k"])
    assert "secret" not in str(raised.value) and redacted(url) == "postgresql://adri@127.0.0.1:9/adri"


def test_adri_classify_with_the_shared_ledger_commits_there_and_its_answers_serve_the_range_runs(
    tmp_path, ollama_stub, ledger_url
):
    settings = _settings(tmp_path, "cli", ollama_stub, ledger_url=ledger_url)
    run, corpus = classify_corpus_file(settings)
    assert run.report.classified == corpus.documents.height
    shared = shared_ledger(settings)
    with shared.connect() as con:
        assert con.execute("SELECT count(*) FROM ledger").fetchone()[0] == corpus.documents.height
        assert con.execute("SELECT count(*) FROM classification_runs").fetchone()[0] == 1
    with duckdb.connect(str(run.snapshot), read_only=True) as con:  # pulled in, results built
        assert (
            con.execute("SELECT count(DISTINCT doc_id) FROM classification_documents").fetchone()[0]
            == corpus.documents.height
        )
    register_corpus(settings, Warehouse(settings.warehouse))
    asked = len(ollama_stub.chats())
    again = classify_shards(RunContext.load(settings), shards_of(corpus.documents["doc_id"]), origin="test")
    assert again.cached == corpus.documents.height and len(ollama_stub.chats()) == asked


def test_a_run_that_classifies_while_it_reads_the_file_opens_one_shared_ledger(
    tmp_path, ollama_stub, ledger_url, monkeypatch
):
    """Failed before: the first documents (classified while the file was read) and the rest each built
    a SharedLedger of their own; the run's context carries one, built with it."""
    built = []
    constructed = SharedLedger.__init__
    monkeypatch.setattr(
        SharedLedger, "__init__", lambda self, *a, **k: (built.append(self), constructed(self, *a, **k))[1]
    )
    run, corpus = classify_corpus_file(_settings(tmp_path, "streamed", ollama_stub, ledger_url=ledger_url))
    assert run.report.classified == corpus.documents.height and len(built) == 1, built


def test_the_shared_ledger_migrates_with_the_warehouses_runner_once_even_when_runs_start_together(ledger_url):
    """One migration runner for DuckDB and PostgreSQL: the shared ledger's versions recorded once,
    though four runs open it at the same moment (the advisory lock makes them wait for one another)."""
    from concurrent.futures import ThreadPoolExecutor

    from adri_pipeline.warehouse import migrations
    from adri_pipeline.warehouse.shared import POSTGRES

    def open_it(_):
        ledger = SharedLedger(ledger_url)
        with ledger.connect():
            return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(open_it, range(4)))
    with psycopg.connect(ledger_url) as con:
        recorded = [row[0] for row in con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
        assert recorded == [version for version, _, _ in migrations(POSTGRES.folder)] and recorded
        assert SharedLedger(ledger_url)._migrate(con) == []
