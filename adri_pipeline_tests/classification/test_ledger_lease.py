"""Leases in the shared ledger on a real PostgreSQL server, with a real loopback model server counting
its calls: two workers over the same shards ask each document once, and a worker killed with SIGKILL
while it holds claims loses nothing. The corpus is synthetic: five marked copies of the project's
(synthetic) sample, 120 documents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import psycopg
import pytest

from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus_reading import register_corpus
from adri_pipeline.classification.ledger import LEDGER_COLUMNS
from adri_pipeline.classification.service import classify_shards
from adri_pipeline.classification.shards import shards_of
from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse
from adri_pipeline.warehouse.shared import SharedLedger
from adri_pipeline_tests.conftest import SAMPLE
from loopback.fakes import document_text

COPIES = 5
WORKER = (
    "import json, sys; from adri_pipeline.classification.service import classify_shards; "
    "from adri_pipeline.classification.context import RunContext; from adri_pipeline.config import Settings; "
    "r = classify_shards(RunContext.load(Settings()), sys.argv[1:], origin='test'); "
    "print(json.dumps({'classified': r.classified, 'cached': r.cached, 'documents': r.documents}))"
)


def _synthetic_corpus(path):
    """COPIES marked copies of each sample document, each with an id of its own: 120 documents."""
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as out:
        for copy in range(COPIES):
            for row in rows:
                out.write(
                    json.dumps(
                        {
                            **row,
                            "id": f"{row['id']}-{copy}",
                            "doi": None,
                            "abstract": f"{row['abstract']} (cópia {copy})",
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    return path


def _registered(tmp_path, stub, ledger_url):
    corpus = _synthetic_corpus(tmp_path / "corpus.jsonl")
    settings = Settings.load(
        warehouse=tmp_path / "w.duckdb",
        corpus=corpus,
        backend="ollama",
        model="qwen-test",
        ollama_hosts=[f"{stub.host}*2"],
        concurrency=2,
        ledger_url=ledger_url,
    )
    documents = register_corpus(settings, Warehouse(settings.warehouse)).documents
    env = {
        **os.environ,
        "ADRI_LEDGER_URL": ledger_url,
        "ADRI_BACKEND": "ollama",
        "ADRI_MODEL": "qwen-test",
        "ADRI_OLLAMA_HOSTS": f"{stub.host}*2",
        "ADRI_CONCURRENCY": "2",
        "ADRI_CORPUS": str(corpus),
        "ADRI_WAREHOUSE": str(settings.warehouse),
        "ADRI_LEDGER_LEASE_S": "3",
    }
    return settings, documents, env


def _worker(env, shards) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WORKER, *shards], env=env, stdout=subprocess.PIPE, text=True)


def _ledger_rows(url) -> dict[str, int]:
    with psycopg.connect(url) as con:
        return dict(con.execute("SELECT doc_id, count(*) FROM ledger GROUP BY doc_id").fetchall())


def test_two_workers_over_the_same_shards_at_once_ask_each_document_once(tmp_path, ollama_stub, ledger_url):
    """Failed before the lease: each worker asked every document, 240 calls for 120."""
    settings, documents, env = _registered(tmp_path, ollama_stub, ledger_url)
    shards = shards_of(documents["doc_id"])
    ollama_stub.delay = 0.05  # a run takes seconds: the two overlap from start to end
    before = len(ollama_stub.chats())
    workers = [_worker(env, shards) for _ in range(2)]
    reports = [json.loads(w.communicate(timeout=240)[0].strip().splitlines()[-1]) for w in workers]
    assert [w.returncode for w in workers] == [0, 0]

    asked = Counter(document_text(chat) for chat in ollama_stub.chats()[before:])
    print(
        f"\n{documents.height} documents (synthetic), two workers over the same {len(shards)} shards: "
        f"{sum(asked.values())} model calls; classified {[r['classified'] for r in reports]}, "
        f"read from the ledger {[r['cached'] for r in reports]}"
    )
    assert sum(asked.values()) == documents.height
    assert set(asked.values()) == {1} and set(asked) == set(documents["text"])
    assert all(r["classified"] > 0 for r in reports)  # both asked: the work was shared, not done twice
    assert sum(r["classified"] for r in reports) == documents.height
    assert all(r["classified"] + r["cached"] == documents.height for r in reports)
    assert _ledger_rows(ledger_url) == {doc_id: 1 for doc_id in documents["doc_id"]}
    with psycopg.connect(ledger_url) as con:  # both ended: no claim left behind
        assert con.execute("SELECT count(*) FROM ledger_claims").fetchone()[0] == 0


def test_a_worker_killed_while_it_holds_claims_loses_nothing_and_costs_at_most_its_claims(
    tmp_path, ollama_stub, ledger_url
):
    """A worker is killed with SIGKILL mid-range, claims held; a second one over the same shards skips
    those claims, does the rest, and takes them over once they expire (3 s). Every document is
    answered, and the calls beyond one per document are at most the claims the killed worker held:
    each of its requests was for a document it had claimed, and a claim goes only when its answer is
    committed (2 × its 2 slots = 4 at most)."""
    settings, documents, env = _registered(tmp_path, ollama_stub, ledger_url)
    shards = shards_of(documents["doc_id"])
    ollama_stub.delay = 0.5
    before = len(ollama_stub.chats())
    victim = _worker(env, shards)
    deadline = time.monotonic() + 120
    with psycopg.connect(ledger_url, autocommit=True) as con:
        while time.monotonic() < deadline and not (
            con.execute("SELECT count(*) FROM ledger").fetchone()[0] >= 10
            and con.execute("SELECT count(*) FROM ledger_claims").fetchone()[0] > 0
        ):
            time.sleep(0.05)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        time.sleep(0.3)  # a request the worker sent just before it died reaches the server's count
        asked_by_victim = len(ollama_stub.chats()) - before
        committed = set(_ledger_rows(ledger_url))
        held = {row[0] for row in con.execute("SELECT doc_id FROM ledger_claims").fetchall()}
    assert held and 10 <= len(committed) < documents.height

    ollama_stub.delay = 0
    settings = settings.model_copy(update={"ledger_lease_s": 3.0})
    started, after_kill = time.monotonic(), len(ollama_stub.chats())
    rescue = classify_shards(RunContext.load(settings), shards, origin="test")
    waited = time.monotonic() - started

    texts = dict(zip(documents["doc_id"], documents["text"]))
    asked_after = Counter(document_text(chat) for chat in ollama_stub.chats()[after_kill:])
    calls = len(ollama_stub.chats()) - before
    print(
        f"\n{documents.height} documents (synthetic); killed holding {len(held)} claim(s) after "
        f"{asked_by_victim} calls and {len(committed)} answers committed; the second worker asked "
        f"{sum(asked_after.values())} in {waited:.1f} s; {calls} calls in all = documents + {calls - documents.height}"
    )
    assert rescue.cached == len(committed) and rescue.classified == documents.height - len(committed)
    assert _ledger_rows(ledger_url) == {doc_id: 1 for doc_id in documents["doc_id"]}  # nothing lost
    assert not set(asked_after) & {texts[d] for d in committed}  # no committed answer asked again
    assert {texts[d] for d in held} <= set(asked_after) and set(asked_after.values()) == {1}
    assert calls - documents.height == asked_by_victim - len(committed) <= len(held) <= 4
    assert waited >= 1.0  # the held documents waited for their claims to expire


def test_a_claim_is_skipped_while_its_worker_lives_read_from_the_ledger_once_answered_and_taken_after_expiry(
    ledger_url,
):
    first, second = SharedLedger(ledger_url, lease_s=2.0), SharedLedger(ledger_url, lease_s=2.0)
    wanted = [("k1", "d1"), ("k2", "d2"), ("k3", "d3")]
    with first.claims() as mine, second.claims() as theirs:
        assert mine.take(wanted) == ({"k1", "k2", "k3"}, set())
        assert theirs.take(wanted) == (set(), set())  # held by a live worker: skipped
        with first.writer(list(LEDGER_COLUMNS)) as commit:
            commit({**{c: None for c in LEDGER_COLUMNS}, "cache_key": "k1", "doc_id": "d1"})
        assert theirs.take(wanted) == (set(), {"k1"})  # answered: read from the ledger, never asked
        mine.release(["k2"])  # failed there: free for another worker now
        assert theirs.take(wanted) == ({"k2"}, {"k1"})
        time.sleep(1.0)
        mine.renew()  # a third of the lease has passed: renewed
        time.sleep(1.0)  # over 2 s after the claim, 1 s after the renewal: k3 still held
        assert theirs.take([("k3", "d3")]) == (set(), set())
        time.sleep(1.5)  # 2.5 s after the renewal: expired
        assert theirs.take([("k3", "d3")]) == ({"k3"}, set())
    with psycopg.connect(ledger_url) as con:  # both ended: every claim let go
        assert con.execute("SELECT count(*) FROM ledger_claims").fetchone()[0] == 0


def test_the_lease_defaults_to_a_documents_time_budget_and_is_set_by_ADRI_LEDGER_LEASE_S(monkeypatch):
    from pydantic import ValidationError

    from adri_pipeline.classification.context import shared_ledger

    url = "postgresql://adri@127.0.0.1:9/adri"
    assert Settings.load(ledger_url=url).lease_s == 600.0  # a request and its one retry, 300 s each
    assert shared_ledger(Settings.load(ledger_url=url, request_timeout_s=45)).lease_s == 90.0
    monkeypatch.setenv("ADRI_LEDGER_LEASE_S", "20")
    assert shared_ledger(Settings.load(ledger_url=url, request_timeout_s=45)).lease_s == 20.0
    monkeypatch.setenv("ADRI_LEDGER_LEASE_S", "0")
    with pytest.raises(ValidationError, match="ledger_lease_s"):
        Settings.load()
