"""Fitting and cross-validating the per-variable models, on synthetic vectors (no encoder)."""

import numpy as np
import pytest

from adri_pipeline.classification.audit import DocumentIndex
from adri_pipeline.classification.coded_model import (
    CodedDocument,
    DocumentVectors,
    TrainingParams,
    cross_validate,
    fit,
)
from adri_pipeline.classification.prompt import build_prompt
from adri_pipeline.classification.validation import check_response

ABORDAGEM = ["qualitativa", "quantitativa", "teorica"]


def synthetic_documents(n=30, dim=16, seed=3) -> list[CodedDocument]:
    """Documents whose abordagem is readable from the document vector, whose tecnica `entrevista` sits
    in one window quoted as evidence, and whose period (when informed) sits in another: synthetic."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(ABORDAGEM), dim))
    interview, period = rng.normal(size=dim), rng.normal(size=dim)
    documents = []
    for i in range(n):
        kind = i % len(ABORDAGEM)
        has_interview, has_period = i % 2 == 0, i % 3 == 0
        texts = [
            f"titulo {i}",
            f"frase neutra numero {i}",
            "foram realizadas entrevistas com gestores",
            "entre 2004 e 2013",
        ]
        windows = rng.normal(scale=0.3, size=(4, dim))
        windows[2] += interview * has_interview
        windows[3] += period * has_period
        spans, start = [("title", 0, len(texts[0]))], 0
        for text in texts[1:]:
            spans.append(("abstract", start, start + len(text)))
            start += len(text) + 1
        vectors = DocumentVectors(spans, texts, windows, centres[kind] + rng.normal(scale=0.3, size=dim))
        codes = {
            "abordagem": ABORDAGEM[kind],
            "tecnica": "entrevista" if has_interview else "nao_informado",
            "recorte": ["local", "nacional"][i % 2],
            "brasil_caso": ["true", "false"][i % 4 == 0],
            "subarea": ["educacao", "direito"][i % 2],
            "periodo": "2004 a 2013" if has_period else "nao_informado",
        }
        evidence = {"tecnica": spans[2] if has_interview else None, "periodo": spans[3] if has_period else None}
        documents.append(CodedDocument(f"d{i:02d}", vectors, codes, evidence))
    return documents


def test_fitting_is_deterministic_and_learns_the_synthetic_signal(pilot):
    documents = synthetic_documents()
    first = fit(documents, pilot, TrainingParams(), digest="a")
    second = fit(documents, pilot, TrainingParams(), digest="a")
    for document in documents:
        (answer_1, confidence_1), (answer_2, confidence_2) = (
            first.predict(document.vectors),
            second.predict(document.vectors),
        )
        assert answer_1 == answer_2 and confidence_1 == confidence_2
    answers = [first.predict(d.vectors)[0] for d in documents]
    assert [a["abordagem"]["valor"] for a in answers] == [d.codes["abordagem"] for d in documents]
    interviewed = [a for a, d in zip(answers, documents) if d.codes["tecnica"] == "entrevista"]
    assert all(a["tecnica"]["valor"] == ["entrevista"] for a in interviewed)
    assert all(a["tecnica"]["evidencia"] == "foram realizadas entrevistas com gestores" for a in interviewed)
    dated = [a for a, d in zip(answers, documents) if d.codes["periodo"] != "nao_informado"]
    assert all(a["periodo"] == {"evidencia": "entre 2004 e 2013", "valor": "entre 2004 e 2013"} for a in dated)


def test_answers_follow_the_codebook_and_quote_a_window(pilot):
    documents = synthetic_documents()
    model = fit(documents, pilot, TrainingParams(), digest="a")
    prompt = build_prompt(pilot)
    for document in documents[:6]:
        answer, _ = model.predict(document.vectors)
        abstract = " ".join(document.vectors.texts[1:])
        checked = check_response(answer, pilot, prompt, DocumentIndex(abstract, document.vectors.texts[0]))
        assert checked.valid, checked.problems
        assert all(a.status in ("literal", "waived") for a in checked.audits.values())


def test_a_value_coded_too_rarely_is_never_predicted_and_reported(pilot):
    documents = synthetic_documents()
    documents[0].codes["tecnica"] = "entrevista|observacao"  # observacao coded once
    model = fit(documents, pilot, TrainingParams(min_positive=2), digest="a")
    assert "observacao" in model.never_predicted["tecnica"]
    assert all("observacao" not in model.predict(d.vectors)[0]["tecnica"]["valor"] for d in documents)


def test_cross_validation_never_scores_a_document_it_trained_on(pilot):
    documents = synthetic_documents()
    predictions = cross_validate(documents, pilot, TrainingParams(), folds=5)
    assert sorted(p.doc_id for p in predictions) == sorted(d.doc_id for d in documents)
    assert all(p.doc_id not in p.trained_on for p in predictions)
    assert all(len(p.trained_on) == 24 for p in predictions)  # 4 of 5 folds of 30


def test_cross_validation_needs_enough_documents(pilot):
    with pytest.raises(ValueError, match="at least 5 coded documents"):
        cross_validate(synthetic_documents(n=4), pilot, TrainingParams(), folds=5)
