"""What the coders' codes are used for, as users run it: train the embedded model, measure agreement
(cross-validated for the trained model), and say which documents to code next.

Called alike by the CLI (`adri classify --coders`, `adri agree`, `adri suggest`), the Dagster
`coded_model` asset and the backend selection. Document vectors are cached in the warehouse
(`document_vectors`, keyed by the text's hash and the encoder), so the coded sample is embedded once.
Documents listed in the holdout file (Settings.holdout) are never trained on and never suggested.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from adri_pipeline.classification.agreement import (
    CoderFileError,
    agreement_table,
    canonical,
    coder_agreement,
    confusion_table,
    load_coder_labels,
    load_codes,
    reference_codes,
)
from adri_pipeline.classification.audit import DocumentIndex, audit_evidence
from adri_pipeline.classification.backends.embedded import (
    VECTORS_VERSION,
    EmbeddedBackend,
    document_windows,
    embed_document,
    encoder_name,
)
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.coded_model import (
    CodedDocument,
    CodedModel,
    DocumentVectors,
    TrainingParams,
    cross_validate,
    fit,
    fold_models,
    model_digest,
)
from adri_pipeline.classification.coding import NO_CODER, audit_codes, audit_shares, gold_codes
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import Document, as_documents, read_corpus
from adri_pipeline.config import Settings
from adri_pipeline.progress import steps
from adri_pipeline.warehouse import Warehouse, read_documents, read_values, read_vectors, store_vectors

log = logging.getLogger(__name__)

ZERO_SHOT = "embedded zero-shot"


def holdout_ids(settings: Settings) -> set[str]:
    """Ids reserved for independent evaluation (one per line, '#' comments). A holdout file that was
    named but is not there is an error: silently using nothing would leak the reserved documents."""
    if settings.holdout is None:
        return set()
    if not Path(settings.holdout).is_file():
        raise CoderFileError(f"{settings.holdout}: holdout file not found (ADRI_HOLDOUT, --holdout)")
    return set(id_lines(Path(settings.holdout)))


def id_lines(path: Path) -> list[str]:
    """A file of document ids: one per line, '#' starts a comment line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


# -- documents and their vectors --------------------------------------------------------------------


def coded_documents(
    settings: Settings, warehouse: Warehouse, doc_ids: list[str], source: Path | None
) -> list[Document]:
    """The given documents from the warehouse, then from `source` (default: the configured corpus)."""
    found = {d.doc_id: d for d in as_documents(read_documents(warehouse, doc_ids))} if warehouse.path.exists() else {}
    missing = [d for d in doc_ids if d not in found]
    if missing:
        path = source or settings.corpus
        corpus = read_corpus(settings, path)
        found.update({d.doc_id: d for d in as_documents(corpus.documents.filter(pl.col("doc_id").is_in(missing)))})
        missing = [d for d in doc_ids if d not in found]
        if missing:
            raise CoderFileError(
                f"{len(missing)} coded document(s) are neither in the warehouse nor in {path}: "
                f"{missing[:5]}; give the corpus that holds them (--coders-corpus, ADRI_CODERS_CORPUS)"
            )
    return [found[d] for d in doc_ids]


def vector_key(document: Document) -> str:
    return hashlib.sha256(json.dumps([document.title, document.abstract, document.text]).encode()).hexdigest()


def document_vectors(warehouse: Warehouse, documents: list[Document]) -> list[DocumentVectors]:
    """Vectors of each document, from the warehouse cache or embedded now (and cached)."""
    encoder = f"{encoder_name()}/{VECTORS_VERSION}"
    keys = [vector_key(d) for d in documents]
    cached = {row[0]: row for row in read_vectors(warehouse, keys, encoder)}
    pending = []
    missing = sum(key not in cached for key in keys)
    for done, (document, key) in enumerate(
        steps(zip(documents, keys), f"embedding ({missing} not cached)", total=len(keys), unit="doc"), start=1
    ):
        if key in cached:
            continue
        vectors = embed_document(document)
        cached[key] = (
            key,
            encoder,
            document.doc_id,
            json.dumps(vectors.spans),
            vectors.document.shape[0],
            vectors.document.astype(np.float32).tobytes(),
            vectors.windows.astype(np.float32).tobytes(),
        )
        pending.append(cached[key])
        if len(pending) == 50:  # a long first embedding keeps what it did if stopped
            store_vectors(warehouse, pending)
            pending = []
            log.info("embedded %d/%d documents", done, len(documents))
    store_vectors(warehouse, pending)
    return [_vectors(cached[key], document) for key, document in zip(keys, documents)]


def _vectors(row: tuple, document: Document) -> DocumentVectors:
    _, _, _, spans, dim, doc_bytes, window_bytes = row
    spans = [tuple(s) for s in json.loads(spans)]
    texts = [(document.title if field == "title" else document.abstract)[s:e] for field, s, e in spans]
    return DocumentVectors(
        spans,
        texts,
        np.frombuffer(window_bytes, dtype=np.float32).reshape(-1, dim),
        np.frombuffer(doc_bytes, dtype=np.float32),
    )


# -- the coded sample and the trained model ---------------------------------------------------------


@dataclass
class CodedSample:
    codebook: Codebook
    documents: list[CodedDocument]
    rows: list[tuple]  # (doc_id, variable, value, evidencia) used, for the model's digest
    dropped_second_codes: int  # rows of a second coder for the same (document, variable): measured, not trained


def _coded_documents(context: RunContext) -> tuple[pl.DataFrame, list[Document], int]:
    """(the first code per (document, variable), the coded documents, codes dropped as second coders');
    fails naming the documents that are reserved (holdout) or cannot be found."""
    settings, codebook = context.settings, context.codebook
    if settings.coders is None:
        raise CoderFileError("no coder file given (--coders, ADRI_CODERS)")
    labels = load_coder_labels(settings.coders, codebook)
    reserved = sorted(set(labels["doc_id"]) & holdout_ids(settings))
    if reserved:
        raise CoderFileError(
            f"{settings.coders}: {len(reserved)} coded document(s) are reserved for independent "
            f"evaluation in {settings.holdout}: {reserved[:5]}; remove them from the coder file"
        )
    first = labels.unique(subset=["doc_id", "variable"], keep="first", maintain_order=True)
    doc_ids = first["doc_id"].unique(maintain_order=True).to_list()
    documents = coded_documents(settings, context.warehouse, doc_ids, settings.coders_corpus)
    return first, documents, labels.height - first.height


def coded_sample(context: RunContext) -> CodedSample:
    """The coder file's documents with their codes, evidence locations and vectors."""
    first, documents, dropped = _coded_documents(context)
    doc_ids = [d.doc_id for d in documents]
    vectors = document_vectors(context.warehouse, documents)
    by_doc: dict[str, dict] = {d: {} for d in doc_ids}
    for doc_id, variable, value, evidence in first.iter_rows():
        by_doc[doc_id][variable] = (value, evidence)
    coded = []
    for document, vecs in zip(documents, vectors):
        index = DocumentIndex(document.abstract, document.title)
        where = {}
        for variable, (_, evidence) in by_doc[document.doc_id].items():
            audit = audit_evidence(evidence, index, no_information=True)
            where[variable] = (audit.field, audit.start, audit.end) if audit.field else None
        coded.append(
            CodedDocument(document.doc_id, vecs, {v: code for v, (code, _) in by_doc[document.doc_id].items()}, where)
        )
    return CodedSample(context.codebook, coded, first.rows(), dropped)


def model_path(settings: Settings, digest: str) -> Path:
    """Where a fit is stored: beside the warehouse, named by its digest (which names everything it
    depends on) and the scikit-learn version that can read it back."""
    import sklearn

    return settings.warehouse.parent / "models" / f"coded-{digest[:16]}-sklearn{sklearn.__version__}.joblib"


def train(context: RunContext, params: TrainingParams | None = None, sample: CodedSample | None = None) -> CodedModel:
    """The per-variable models for the coder file (its `sample`, when the caller already read it):
    loaded when this exact fit is stored (the `coded_model` asset stores it), else fitted and stored.
    Deterministic for the same file, texts and settings."""
    import joblib

    settings, params = context.settings, params or TrainingParams()
    sample = sample or coded_sample(context)
    texts = [" ".join(d.vectors.texts) for d in sample.documents]
    digest = model_digest(context.prompt.signature, params, encoder_name(), sample.rows, texts)
    path = model_path(settings, digest)
    if path.is_file():
        try:
            model = joblib.load(path)
        except Exception as exc:  # noqa: BLE001 - a damaged file is fitted again, never trusted
            log.warning("coded model %s: %s unreadable (%s); fitting again", digest[:12], path, exc)
        else:
            if isinstance(model, CodedModel) and model.digest == digest:
                log.info("coded model %s loaded from %s", digest[:12], path)
                return model
    try:
        model = fit(sample.documents, sample.codebook, params, digest)
    except ValueError as exc:
        raise CoderFileError(f"{settings.coders}: {exc}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".tmp{os.getpid()}")
    joblib.dump(model, temporary)
    os.replace(temporary, path)  # a kill while writing leaves no half a model under the real name
    log.info(
        "coded model %s: %d documents from %s%s, stored in %s",
        digest[:12],
        len(sample.documents),
        settings.coders,
        f" ({sample.dropped_second_codes} second codes not trained on)" if sample.dropped_second_codes else "",
        path,
    )
    return model


@dataclass
class DeferredFit:
    """A coded model known by its digest — everything a cache key needs — before it is fitted or
    loaded: a run whose documents are all in the ledger never pays for either (ADR 0011: "o modelo só
    é checado e carregado se houver algo a classificar")."""

    context: RunContext
    params: TrainingParams
    digest: str
    documents: list[str]

    @property
    def signature(self) -> str:
        """The prompt signature the fit is for (the run's: its digest names it)."""
        return self.context.prompt.signature

    def load(self) -> CodedModel:
        model = train(self.context, self.params)
        if model.digest != self.digest:
            raise CoderFileError(f"{self.context.settings.coders} changed while the run started; run again")
        return model


def deferred_fit(context: RunContext, params: TrainingParams | None = None) -> DeferredFit:
    """The fit `train` would give, by its digest: the same codes and window texts, no encoder."""
    params = params or TrainingParams()
    first, documents, _ = _coded_documents(context)
    texts = [" ".join(document_windows(d)[1]) for d in documents]
    digest = model_digest(context.prompt.signature, params, encoder_name(), first.rows(), texts)
    return DeferredFit(context, params, digest, [d.doc_id for d in documents])


def embedded_backend(context: RunContext) -> EmbeddedBackend:
    """The embedded backend a run uses: trained on the coder file when one is configured (fitted or
    loaded only when a document needs it), else zero-shot."""
    floor = context.settings.memory_floor_mb
    if context.settings.coders is None:
        return EmbeddedBackend(memory_floor_mb=floor)
    return EmbeddedBackend(trained=deferred_fit(context), memory_floor_mb=floor)


def cross_fitted_answers(
    context: RunContext, training: dict, trained_on: list[str], held: list[str], corpus: list[str], folds: int = 5
) -> tuple[dict[str, dict], list[dict[str, dict]]]:
    """(each `held` document's answer by the fold model fitted without it; per fold model, its answers
    on the other documents of `corpus`) for a model trained on the coders' codes of `trained_on` with
    the settings `training` (what its run recorded): coded_model.fold_models, on the coders' file as it
    is now. Vectors come from the warehouse cache (embedded once). ValueError when a fold cannot be
    fitted (a variable coded only in one fold)."""
    settings = context.settings
    known = set(trained_on)
    sample = [d for d in coded_sample(context).documents if d.doc_id in known]
    fold_of, models = fold_models(
        sample, held, context.codebook, TrainingParams(**training), max(2, min(folds, len(set(held))))
    )
    documents = coded_documents(settings, context.warehouse, corpus, settings.coders_corpus)
    answered, rest = {}, [{} for _ in models]
    for document, vectors in zip(documents, document_vectors(context.warehouse, documents)):
        if document.doc_id in fold_of:
            answered[document.doc_id] = models[fold_of[document.doc_id]].predict(vectors)[0]
            continue
        for k, model in enumerate(models):
            rest[k][document.doc_id] = model.predict(vectors)[0]
    return answered, rest


# -- agreement ------------------------------------------------------------------------------------------


@dataclass
class Agreement:
    table: pl.DataFrame  # agreement_table rows, one per (model, variable)
    confusions: dict[tuple[str, str], pl.DataFrame]  # (model, variable) -> confusion table
    documents: int
    round: RoundMeasures | None = None  # with named coders (a coding round's CSV)


@dataclass
class RoundMeasures:
    """What a coding round's CSV adds to the agreement with models."""

    between_coders: pl.DataFrame  # coding.coder_agreement: per (round, variable), blind pass
    gold_sources: pl.DataFrame  # (round, source, codes): adjudicated, agreed, single coder
    unresolved: pl.DataFrame  # disagreements not adjudicated yet: no gold
    coder_audits: pl.DataFrame  # coding.audit_shares: per (round, pass, coder)
    models_by_round: pl.DataFrame  # agreement_table rows against each round's own gold, with `round`


def answers_frame(model: str, answers: dict[str, dict]) -> pl.DataFrame:
    rows = [
        {"model": model, "doc_id": doc_id, "variable": variable, "value": canonical(answer["valor"])}
        for doc_id, by_variable in answers.items()
        for variable, answer in by_variable.items()
    ]
    return pl.DataFrame(
        rows, schema={"model": pl.String, "doc_id": pl.String, "variable": pl.String, "value": pl.String}
    )


def agreement(
    context: RunContext, cross_validated: bool = False, folds: int = 5, sample: CodedSample | None = None
) -> Agreement:
    """Every stored model's results against the coders; with `cross_validated`, also the trained
    embedded model (each document answered by a model fitted without it) and the zero-shot model on
    the same documents."""
    settings, codebook, warehouse = context.settings, context.codebook, context.warehouse
    codes = load_codes(settings.coders, codebook)
    coders = reference_codes(codes)
    frames = []
    if warehouse.path.exists():
        frames.append(read_values(warehouse, codebook.content_hash).select("model", "doc_id", "variable", "value"))
    documents = coders["doc_id"].n_unique()
    if cross_validated:
        sample = sample or coded_sample(context)
        try:
            predictions = cross_validate(sample.documents, codebook, TrainingParams(), folds)
        except ValueError as exc:
            raise CoderFileError(f"{settings.coders}: {exc}") from None
        frames.append(
            answers_frame(f"embedded trained ({folds}-fold cross-validated)", {p.doc_id: p.answer for p in predictions})
        )
        backend = EmbeddedBackend()
        backend.prepare(codebook, None)
        frames.append(answers_frame(ZERO_SHOT, {c.doc_id: backend.zero_shot(c.vectors) for c in sample.documents}))
    results = pl.concat(frames) if frames else answers_frame("", {})
    table = agreement_table(results, coders, codebook)
    confusions = {
        (m, v): confusion_table(results, coders, codebook, m, v)
        for m, v in table.select("model", "variable").iter_rows()
    }
    return Agreement(table, confusions, documents, _round_measures(settings, warehouse, codes, codebook, results))


def round_measures(context: RunContext) -> RoundMeasures | None:
    """The coders' file's coder-vs-coder figures; None for a file without named coders."""
    settings, codebook = context.settings, context.codebook
    return _round_measures(settings, context.warehouse, load_codes(settings.coders, codebook), codebook)


def _round_measures(
    settings: Settings,
    warehouse: Warehouse,
    codes: pl.DataFrame,
    codebook: Codebook,
    results: pl.DataFrame | None = None,
) -> RoundMeasures | None:
    if (codes["coder"] == NO_CODER).all():
        return None
    gold, unresolved = gold_codes(codes)
    doc_ids = codes["doc_id"].unique(maintain_order=True).to_list()
    documents = {d.doc_id: d for d in coded_documents(settings, warehouse, doc_ids, settings.coders_corpus)}
    by_round = (
        [
            agreement_table(results, group, codebook).select(pl.lit(name).alias("round"), pl.all())
            for (name,), group in gold.group_by("round", maintain_order=True)
        ]
        if results is not None
        else []
    )
    return RoundMeasures(
        coder_agreement(codes, codebook),
        gold.group_by("round", "source").len(name="codes").sort("round", "source"),
        unresolved,
        audit_shares(audit_codes(codes, documents, codebook)),
        pl.concat(by_round) if by_round else pl.DataFrame(),
    )


# -- what to code next ------------------------------------------------------------------------------


@dataclass
class Suggestion:
    doc_id: str
    title: str
    reason: str
    score: float  # lower = more useful to code


def suggest(context: RunContext, n: int = 20, seed: int = 20261130, corpus: Path | None = None) -> list[Suggestion]:
    """Uncoded documents where a code helps most: where the stored embedded and LLM results disagree,
    then where the trained model is least sure (smallest mean margin between its top answers). With no
    coder file, a seeded random draw. Never a document already coded or reserved (holdout)."""
    settings, warehouse = context.settings, context.warehouse
    pool = as_documents(read_corpus(settings, corpus).documents)
    reserved = holdout_ids(settings)
    if settings.coders is None:
        titles = {d.doc_id: d.title for d in pool if d.doc_id not in reserved}
        drawn = random.Random(seed).sample(sorted(titles), min(n, len(titles)))
        return [Suggestion(d, titles[d], f"random draw (random state {seed}): no codes yet", 0.0) for d in drawn]
    sample = coded_sample(context)
    model = train(context, sample=sample)
    coding = set(load_codes(settings.coders, sample.codebook)["doc_id"])  # a dispute still open is coded too
    excluded = {d.doc_id for d in sample.documents} | coding | reserved
    candidates = [d for d in pool if d.doc_id not in excluded]
    disagreements = _disagreements(warehouse, sample.codebook, {d.doc_id for d in candidates})
    vectors = document_vectors(warehouse, candidates)
    suggestions = []
    for document, vecs in zip(candidates, vectors):
        _, confidence = model.predict(vecs)
        variable = min(confidence, key=confidence.get)
        score = sum(confidence.values()) / len(confidence)
        reason = f"trained model unsure: mean margin {score:.3f}, least sure of {variable} ({confidence[variable]:.3f})"
        if document.doc_id in disagreements:
            reason = f"models disagree on {', '.join(disagreements[document.doc_id])}; " + reason
            score -= len(disagreements[document.doc_id])
        suggestions.append(Suggestion(document.doc_id, document.title, reason, round(score, 3)))
    return sorted(suggestions, key=lambda s: (s.score, s.doc_id))[:n]


def _disagreements(warehouse: Warehouse, codebook: Codebook, candidates: set[str]) -> dict[str, list[str]]:
    """Per document, the variables where an embedded and an LLM result set differ (when both exist)."""
    if not warehouse.path.exists():
        return {}
    values = read_values(warehouse, codebook.content_hash).filter(pl.col("doc_id").is_in(list(candidates)))
    embedded = values.filter(pl.col("model").str.starts_with("embedded:"))
    llm = values.filter(~pl.col("model").str.starts_with("embedded:"))
    if embedded.is_empty() or llm.is_empty():
        return {}
    joined = embedded.join(llm, on=["doc_id", "variable"], suffix="_llm").filter(pl.col("value") != pl.col("value_llm"))
    found: dict[str, list[str]] = {}
    for doc_id, variable in joined.select("doc_id", "variable").unique(maintain_order=True).iter_rows():
        found.setdefault(doc_id, []).append(variable)
    return found
