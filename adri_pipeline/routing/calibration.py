"""A candidate's logits as calibrated System One answers: a temperature per task fitted on the
calibration split (each calibration request asked once), and, for the embedded kinds, their
confidence tempered on messages unlike the fit data (`Familiarity`)."""

from __future__ import annotations

import time

import numpy as np

from adri_pipeline.jev.contract import (
    answer_from,
)
from adri_pipeline.jev.contract import (
    response as wire_response,
)
from adri_pipeline.jev.serialize import parse_state
from adri_pipeline.progress import steps
from adri_pipeline.routing.candidates import Candidate, Logits, softmax
from adri_pipeline.routing.encoder import Encoder


class Familiarity:
    """How much a message looks like the data a candidate was fitted on, as a weight in [0, 1]: the
    cosine similarity of its embedding to the nearest fit message, against what held-out messages of
    the same data score (the calibration split). At or above their 10th percentile a message is
    familiar (1); below their minimum by as much again as the 10th percentile is above it, foreign
    (0); linear between. Calibrated probabilities are blended toward uniform by that weight: the
    answer never changes, and the confidence on data unlike the fit data falls — a candidate fitted
    on one source was confidently wrong on half of another's turns."""

    QUANTILE = 0.10

    def __init__(self, encoder: "Encoder", fit_messages: list[str], held_out_messages: list[str]):
        self.encoder = encoder
        self.fit = self._unit(encoder(list(dict.fromkeys(fit_messages))))
        nearest = self.nearest(self._unit(encoder(held_out_messages))) if held_out_messages else np.array([1.0])
        self.reference = nearest  # the held-out messages' similarities: what a drift monitor compares with
        self.high = float(np.quantile(nearest, self.QUANTILE))
        self.low = float(nearest.min()) - max(self.high - float(nearest.min()), 0.02)

    @staticmethod
    def _unit(vectors: np.ndarray) -> np.ndarray:
        vectors = np.atleast_2d(vectors)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def nearest(self, vectors: np.ndarray) -> np.ndarray:
        return (vectors @ self.fit.T).max(axis=1)

    def similarity(self, message: str) -> float:
        """Cosine similarity of the message to the nearest fit message."""
        return float(self.nearest(self._unit(self.encoder.message(message)))[0])

    # The weight of the most foreign message: not 0, which made every option tie and the first listed
    # one the answer (on SGD's D2 turns, fitted on the sample, 40 % of the answers were "continue" that way,
    # and its accuracy read 0.71 where the model's own answers score 0.51); this keeps the model's order.
    FOREIGN = 1e-6

    def weight(self, similarity: float) -> float:
        """The weight of a message whose `similarity` (above) is this."""
        return float(np.clip((similarity - self.low) / (self.high - self.low), self.FOREIGN, 1.0))


TEMPERATURE_PRIOR_SD = 0.5  # on log T: T within [0.37, 2.7] at 2 sd before any data


class Calibrated:
    """Temperature per task, fitted on the calibration split by negative log-likelihood; with a
    `Familiarity`, the probabilities are tempered on messages unlike the fit data, except for the tasks
    in `unblended`: their temperature was fitted on answers to catalogues and sources the candidate never
    fitted on (routing/new_catalogues.py), which already says how sure it may be there."""

    unblended: frozenset[str] = frozenset()  # a class default: artifacts saved before it read as blended

    def __init__(self, candidate: Candidate):
        self.candidate = candidate
        self.name = candidate.name
        self.temperature: dict[str, float] = {}
        self.familiarity: Familiarity | None = None
        self.last_native_confidence: float | None = None  # the uncalibrated max probability (T = 1)
        self.last_familiarity: float | None = None  # the last message's Familiarity.similarity
        self._asked: dict[str, Logits] = {}  # calibration requests -> the candidate's logits
        # new_catalogues.HeldOutAnswers that fitted the unblended tasks' temperature: the thresholds and
        # prediction sets chosen next read them too (not saved: the artifact is the fitted state)
        self.held_out = None

    def __getstate__(self) -> dict:
        """The saved artifact keeps no calibration answers (a cold run meets every request unseen) nor
        what the last decision left behind: it is the fitted state, whose digest the freeze records."""
        return {
            **self.__dict__,
            "_asked": {},
            "last_native_confidence": None,
            "last_familiarity": None,
            "held_out": None,
        }

    def forget_calibration_answers(self) -> None:
        self._asked = {}

    def fit_temperature(self, requests: list[dict], golds: list, tasks: list[str]) -> None:
        """Per task, the temperature in [0.005, 20] that minimises the negative log-likelihood of the
        gold answers plus a normal prior on log T (mean 0, sd TEMPERATURE_PRIOR_SD): a bounded search
        on log T, scipy.optimize. The prior makes it the maximum a posteriori fit: on a few hundred
        answers the data decide; on a small calibration split the model got all right (the sample's
        19 D2 turns), plain NLL drives T towards its floor and makes every later answer near-certain."""
        by_task: dict[str, list[tuple[dict, str]]] = {}
        for request, gold, task in steps(
            list(zip(requests, golds, tasks)), f"{self.name}: calibration answers", unit="ex"
        ):
            request = self.candidate.fitted(request)
            logits_of = self.candidate.logits(request)
            self._asked[_request_key(request)] = logits_of
            for name, logits in logits_of.items():
                target = gold if task != "D4" else ("sim" if name in gold else "nao")
                by_task.setdefault(task, []).append((logits, target))
        for task, pairs in by_task.items():
            self.temperature[task] = _temperature(pairs)

    def fit_unblended_temperature(self, task: str, requests: list[dict], logits: list[Logits], golds: list) -> None:
        """`task`'s temperature fitted on answers to decisions the fit never saw (the hand-written turns answered
        by candidates fitted without their catalogue, new_catalogues.HeldOutAnswers, and the other sources'
        calibration splits), and its confidence left unblended. Those answers are kept as calibration
        answers: thresholds and prediction sets read them next, as the fold candidates gave them."""
        pairs = []
        for request, option_logits, gold in zip(requests, logits, golds):
            self._asked[_request_key(self.candidate.fitted(request))] = option_logits
            pairs += [(values, gold) for values in option_logits.values()]
        self.temperature[task] = _temperature(pairs)
        self.unblended = self.unblended | {task}

    def respond_batch(self, batch: list[tuple[dict, str]]) -> list[dict]:
        """Decisions taken together (the production batch): their messages embedded in one call."""
        batch = [(self.candidate.fitted(request), task) for request, task in batch]
        self.candidate.begin_batch([parse_state(request["state"])["message"] for request, _ in batch])
        try:
            return [self.respond(request, task)[0] for request, task in batch]
        finally:
            self.candidate.begin_batch([])

    def respond(self, request: dict, task: str, count_tokens: bool = False) -> tuple[dict, float]:
        """The System One response and the seconds it took. A question whose answer the candidate
        could not use (a served kind's invalid answer: `candidate.last_invalid`) has no answer.
        `count_tokens`: fill `usage.input_tokens` (after the clock stops; the timed performance runs
        leave it 0). The state is cut to the candidate's token limit before the clock starts: the
        seconds are the model's, as the serialization is not counted either (`adri routing serve`'s
        clients see both)."""
        # the state within the candidate's token limit; before the clock, as the serialization is
        request = self.candidate.fitted(request)
        started = time.perf_counter()
        self.candidate.begin_decision()
        logits = self._logits(request)
        answers = {}
        native = [max(softmax(option_logits).values()) for option_logits in logits.values()]
        self.last_native_confidence = float(np.mean(native)) if native else None
        message = parse_state(request["state"])["message"]
        similarity = self.familiarity.similarity(message) if self.familiarity else None
        weight = self.familiarity.weight(similarity) if self.familiarity else 1.0
        self.last_familiarity = similarity
        for name, option_logits in logits.items():
            probabilities = softmax(option_logits, self.temperature.get(task, 1.0))
            if weight < 1.0 and task not in self.unblended:
                probabilities = {o: weight * p + (1 - weight) / len(probabilities) for o, p in probabilities.items()}
            answers[name] = answer_from(request["questions"][name], probabilities)
        seconds = time.perf_counter() - started
        tokens = self.candidate.input_tokens(request) if count_tokens else 0
        return wire_response(self.name, answers, tokens), seconds

    def _logits(self, request: dict) -> Logits:
        """The candidate's logits, each calibration request asked once (`fit_temperature` keeps them
        for the thresholds that follow: an LLM is not paid twice for the same example)."""
        key = _request_key(request)
        if key in self._asked:
            return self._asked[key]
        return self.candidate.logits(request)


def _temperature(pairs: list[tuple[dict, str]]) -> float:
    """The temperature in [0.005, 20] minimising the negative log-likelihood of the gold answers plus
    the normal prior on log T (Calibrated.fit_temperature): a bounded search on log T."""
    from scipy.optimize import minimize_scalar

    def nll(log_t: float) -> float:
        t = float(np.exp(log_t))
        return -sum(np.log(softmax(logits, t).get(target, 0.0) + 1e-12) for logits, target in pairs) + log_t**2 / (
            2 * TEMPERATURE_PRIOR_SD**2
        )

    best = minimize_scalar(nll, bounds=(np.log(0.005), np.log(20.0)), method="bounded", options={"xatol": 1e-3})
    return float(np.exp(best.x))


def _request_key(request: dict) -> str:
    import json

    return json.dumps([request["state"], request["questions"]], sort_keys=True, ensure_ascii=False)
