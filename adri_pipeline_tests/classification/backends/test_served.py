"""Many model hosts (classification/backends/served.py): a host that goes away costs its slots, not
the run. Two loopback servers speaking Ollama's API, driven by the real `ollama` client."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from adri_pipeline.classification.backends.base import BackendError
from adri_pipeline.classification.backends.served import ServedBackend
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import load_corpus
from adri_pipeline.classification.service import classify_documents
from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse, store_corpus
from adri_pipeline_tests.conftest import PILOT, SAMPLE
from loopback.fakes import answer_from_request
from loopback.model_server import ModelServerStub

N = 23  # documents with an abstract in the sample


def _answering(answered: Counter, lock: threading.Lock):
    """A responder that records the title of every request it answers (a dropped one never gets here)."""

    def respond(request: dict) -> str:
        user = [m for m in request["messages"] if m["role"] == "user"][0]["content"]
        with lock:
            answered[user.split("\n", 1)[0]] += 1
        return answer_from_request(request)

    return respond


def _settings(tmp_path, hosts: list[str]) -> Settings:
    return Settings(
        warehouse=tmp_path / "wh" / "adri.duckdb",
        corpus=SAMPLE,
        codebook=PILOT,
        backend="ollama",
        model="qwen-test",
        ollama_hosts=hosts,
    )


def test_a_host_that_dies_mid_run_and_comes_back_costs_its_slots_not_the_run(tmp_path):
    """Host A drops every request after its second answer (a server dying mid-request); when B has answered
    six (longer than the old retries of one host lasted), A is back. Every document is answered once, at one
    host or the other, the run never stops, and A answered again after it rejoined."""
    at_a, at_b, lock = Counter(), Counter(), threading.Lock()
    with (
        ModelServerStub(responder=_answering(at_a, lock)) as a,
        ModelServerStub(responder=_answering(at_b, lock), delay=0.1) as b,
    ):
        a.drop_after = 2

        def restart_a():
            while sum(at_b.values()) < 6:
                threading.Event().wait(0.01)
            a.drop_after = None

        threading.Thread(target=restart_a, daemon=True).start()
        backend = ServedBackend("ollama", "qwen-test", [a.host, b.host], backoff_s=0.01)
        settings = _settings(tmp_path, [a.host, b.host])
        store_corpus(Warehouse(settings.warehouse), load_corpus(SAMPLE))
        run = classify_documents(
            RunContext.load(settings), load_corpus(SAMPLE).documents, origin="test", backend=backend
        )
    assert run.report.stopped == "" and run.report.classified == N
    both = at_a + at_b
    assert sum(both.values()) == N and set(both.values()) == {1}  # every document answered once, none twice
    assert sum(at_a.values()) > 2  # A answered again after it rejoined


def test_a_run_starts_with_the_hosts_that_answer_and_names_the_others(tmp_path, caplog):
    answered, lock = Counter(), threading.Lock()
    with ModelServerStub(responder=_answering(answered, lock)) as b:
        dead = "http://127.0.0.1:9"  # nothing listens there
        backend = ServedBackend("ollama", "qwen-test", [dead, b.host], backoff_s=0.01)
        settings = _settings(tmp_path, [dead, b.host])
        store_corpus(Warehouse(settings.warehouse), load_corpus(SAMPLE))
        run = classify_documents(
            RunContext.load(settings), load_corpus(SAMPLE).documents.head(5), origin="test", backend=backend
        )
    assert run.report.stopped == "" and run.report.classified == 5 and sum(answered.values()) == 5
    assert "starting on 1 of 2 hosts; not answering: http://127.0.0.1:9" in caplog.text


def test_with_no_host_answering_the_run_does_not_start(tmp_path):
    backend = ServedBackend("ollama", "qwen-test", ["http://127.0.0.1:9", "http://127.0.0.1:10"], backoff_s=0.01)
    with pytest.raises(BackendError, match="not reachable at http://127.0.0.1:9, http://127.0.0.1:10"):
        _ = backend.digest


def test_a_host_never_has_more_requests_in_flight_than_its_declared_slots(tmp_path):
    """Failed before: a host declared with 2 slots had 3 requests in flight (one queued at the server)."""
    with (
        ModelServerStub(responder=answer_from_request, delay=0.05) as two,
        ModelServerStub(responder=answer_from_request, delay=0.05) as three,
    ):
        hosts = [f"{two.host}*2", f"{three.host}*3"]
        backend = ServedBackend("ollama", "qwen-test", hosts, backoff_s=0.01)
        settings = _settings(tmp_path, hosts).model_copy(update={"concurrency": 8})
        store_corpus(Warehouse(settings.warehouse), load_corpus(SAMPLE))
        run = classify_documents(
            RunContext.load(settings), load_corpus(SAMPLE).documents, origin="test", backend=backend
        )
    assert run.report.classified == N
    assert two.most_in_flight == 2 and three.most_in_flight == 3


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_server_that_accepts_and_never_answers_is_not_answering_not_unreachable(provider):
    """Failed before: a port that accepts connections and says nothing was reported "not reachable",
    sending the user to start a server that is running."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel accepts; nobody reads or answers
        host = f"http://127.0.0.1:{silent.getsockname()[1]}" + ("/v1" if provider == "openai" else "")
        backend = ServedBackend(provider, "qwen-test", [host], backoff_s=0.01, timeout_s=1.0)
        with pytest.raises(BackendError, match="accepts connections but did not answer within 1 s") as raised:
            _ = backend.digest
    assert "not reachable" not in str(raised.value)


def test_a_host_that_comes_back_with_other_weights_stays_out_and_the_run_stops_if_it_was_the_last(tmp_path):
    """The only host drops a request, then answers with other weights under the same name: it is not
    given documents again, and the run stops cleanly instead of waiting for it forever."""
    from loopback import model_server

    with ModelServerStub(responder=answer_from_request) as a:
        a.script = [{"drop": True}]
        backend = ServedBackend("ollama", "qwen-test", [a.host], backoff_s=0.05)
        _ = backend.digest
        original, model_server.DIGEST = model_server.DIGEST, "sha256:" + "cd" * 32  # the weights changed
        try:
            settings = _settings(tmp_path, [a.host])
            store_corpus(Warehouse(settings.warehouse), load_corpus(SAMPLE))
            try:
                run = classify_documents(
                    RunContext.load(settings), load_corpus(SAMPLE).documents.head(3), origin="test", backend=backend
                )
                stopped, classified = run.report.stopped, run.report.classified
            except BackendError as exc:  # nothing answered at all: the run raises instead of reporting
                stopped, classified = str(exc), 0
        finally:
            model_server.DIGEST = original
        answered = [r for path, r in a.requests if path == "/api/chat"]
    assert "came back serving other weights" in stopped
    # the two requests sent at the start (one dropped, one maybe answered), none after the weights changed
    assert len(answered) <= 2 and classified == len(answered) - 1


def test_a_model_bigger_than_the_free_memory_is_not_loaded_and_nothing_is_written(tmp_path):
    """The memory check before loading (ADR 0011's resource rule): an Ollama server on this machine lists a
    model larger than the free memory; the run stops before any request, naming the sizes, with nothing in the
    ledger."""
    import psutil

    with ModelServerStub(responder=answer_from_request) as a:
        a.size = psutil.virtual_memory().available * 4
        settings = _settings(tmp_path, [a.host])
        backend = ServedBackend("ollama", "qwen-test", [a.host])
        with pytest.raises(BackendError, match=r"qwen-test needs about \d+ MB to load and \d+ MB are free"):
            classify_documents(
                RunContext.load(settings), load_corpus(SAMPLE).documents.head(3), origin="test", backend=backend
            )
        loads = [r for path, r in a.requests if path in ("/api/chat", "/api/generate")]
    assert loads == []  # nothing loaded, nothing asked
    if settings.warehouse.exists():
        assert Warehouse(settings.warehouse).query("SELECT count(*) AS n FROM ledger")["n"][0] == 0


def test_an_answer_sent_before_a_host_was_taken_out_does_not_reset_its_count_of_failures():
    """The cause of a test that failed on loaded machines: a request sent before the host dropped
    another one, answered after the drop, cleared the host's failures, so the run allowed it one more
    episode than `reconnect_retries` (7 requests dropped where at most 6 can be). Only an answer to a
    request sent after the latest take-out says the host is back."""
    from adri_pipeline.classification.codebook import load_codebook
    from adri_pipeline.classification.corpus import as_documents
    from adri_pipeline.classification.prompt import build_prompt

    prompt = build_prompt(load_codebook(PILOT))
    first, second = as_documents(load_corpus(SAMPLE).documents)[:2]
    with ModelServerStub(responder=answer_from_request) as stub:
        stub.script = [{"delay": 0.6, "content": "{}"}, {"drop": True}]  # answered after 0.6 s; dropped
        # two slots: both requests in flight at once
        backend = ServedBackend("ollama", "qwen-test", [stub.host + "*2"], backoff_s=30.0, reconnect_retries=2)
        backend.pool.digest = backend.servers[0].model_info("qwen-test").digest
        slow = threading.Thread(target=backend.classify, args=(prompt, first))
        slow.start()
        while not stub.chats():  # the slow request is at the server before the other is sent
            threading.Event().wait(0.01)
        dropped = threading.Thread(target=lambda: _swallow(backend.classify, prompt, second))
        dropped.start()
        slow.join(10)
        assert not slow.is_alive()
        assert backend.pool.out == {0} and backend.pool.failures.get(0) == 1
        backend.stop()
        dropped.join(10)
        backend.close()


def _swallow(call, *args):
    try:
        call(*args)
    except Exception:  # noqa: BLE001 - the run stopping while this document waits for a host
        pass
