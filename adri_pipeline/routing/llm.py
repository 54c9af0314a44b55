"""The LLM baseline of H1 (`ollama:<model>` or `openai:<model>`): a generative model whose option
probabilities are read from one forward pass, as the JEV design reads every candidate's (logits).

Each question is asked on its own: its options listed under letters (A, B, ...), the model asked
for the letter; one token is generated at temperature 0 with the server's 20 most likely first
tokens and their log-probabilities (llama-server, vLLM and OpenAI-compatible servers return them, so
does Ollama). An option's logit is the log-probability of its letter ("A", " A" and "A)" pooled);
a letter not among the 20 gets the most it can have: no more than the least likely one listed, and
no more than its share of the mass left unlisted. Softmax over the letters renormalizes, so the
mass the model put on anything but a letter does not count.

A server that returns no log-probabilities (found by `check()`, before any work) makes the baseline
fall back to verbalized probabilities — numbers the model writes in a JSON answer — and the kind
says so, so the report labels it (Kind.confidence)."""

from __future__ import annotations

import json
import string

import numpy as np
from scipy.special import logsumexp

from adri_pipeline.jev.contract import RoutingConfigError, descriptions_of, options_of, text_of
from adri_pipeline.routing.candidates import Candidate, Kind, Logits, ModelServerLost

TOP_LOGPROBS = 20  # the most the OpenAI API (and vLLM by default) returns
LETTERS = string.ascii_uppercase
SYSTEM = (
    "Você decide como um orquestrador de agentes trata a mensagem do usuário. Responda só com a letra da opção certa."
)
VERBALIZED = Kind(
    "llm_baseline",
    trains=False,
    batching="server",
    confidence="verbalized: probabilities the model wrote in its JSON answer (the server "
    "returned no log-probabilities)",
)


class LLMCandidate(Candidate):
    kind = Kind(
        "llm_baseline",
        trains=False,
        batching="server",
        confidence="option log-probabilities: the letter of each option as the first answer token, "
        f"from the server's top {TOP_LOGPROBS}, one forward pass per question",
        precision="the server's (a GGUF's quantization, a vLLM dtype): the API does not report it",
    )

    # half of llama-server's slot (models/llama_server.CONTEXT_PER_SLOT), the rest for the instructions and
    # options; the chat API has no tokenizer call, so counted at 3 characters per token (jev/serialize.py)
    token_limit = 4096
    counted_by = "estimated: 3 characters per token (the chat API does not tokenize)"

    def count_tokens(self, text: str) -> int:
        return -(-len(text) // 3)

    def __init__(self, name: str, *, encoder=None, settings=None, timeout_s: float = 120.0, verbalized: bool = False):
        from adri_pipeline.models.select import chat_server

        super().__init__(name)
        self.settings, self.timeout_s = settings, timeout_s
        self.server, self.model = chat_server(name, settings, timeout_s)
        if verbalized:
            self.kind = VERBALIZED

    @property
    def verbalized(self) -> bool:
        return self.kind is VERBALIZED

    def __getstate__(self) -> dict:
        """Saved as what reaches the server again, not as an open connection."""
        return {
            "name": self.name,
            "settings": self.settings,
            "timeout_s": self.timeout_s,
            "verbalized": self.verbalized,
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def loaded_bytes(self) -> int:
        return self.server.model_info(self.model).size_bytes

    def check(self) -> None:
        """Before any work: the server answers and serves the model (a RoutingConfigError names it),
        and whether it returns log-probabilities (if not, the verbalized fallback, labelled)."""
        from adri_pipeline.models.base import ModelMissing, NoLogprobs, ServerUnreachable, TimedOut

        try:
            self.server.model_info(self.model)
            if not self.verbalized:
                self.server.next_token(self.model, [{"role": "user", "content": "A ou B?"}], TOP_LOGPROBS, {})
        except (ServerUnreachable, TimedOut) as exc:
            raise RoutingConfigError(
                f"candidate {self.name}: no server at {self.server.host} ({exc}); {self.server.start_hint}"
            ) from None
        except ModelMissing as exc:
            raise RoutingConfigError(f"candidate {self.name}: {exc}") from None
        except NoLogprobs:
            self.kind = VERBALIZED

    def logits(self, request: dict) -> Logits:
        from adri_pipeline.models.base import ServerUnreachable, TimedOut

        try:
            return self._logits(request)
        except (ServerUnreachable, TimedOut) as exc:
            raise ModelServerLost.of(self.name, self.server, exc) from None

    def _logits(self, request: dict) -> Logits:
        if self.verbalized:
            return self._verbalized(request)
        from adri_pipeline.models.base import NoLogprobs

        out: Logits = {}
        tokens = 0
        for name, question in request["questions"].items():
            try:
                out[name], read = self._option_logprobs(request["state"], question)
            except NoLogprobs:  # check() was not asked first: the whole request falls back, labelled
                self.kind = VERBALIZED
                return self._verbalized(request)
            tokens += read
        self.last_input_tokens = tokens
        return out

    def _option_logprobs(self, state: str, question: dict) -> tuple[dict[str, float], int]:
        options, descriptions = options_of(question), descriptions_of(question)
        if len(options) > len(LETTERS):
            raise RoutingConfigError(
                f"candidate {self.name}: {len(options)} options, more than the "
                f"{len(LETTERS)} letters it can name (the JEV design allows 20)"
            )
        lines = "\n".join(
            f"{letter}) {option}: {descriptions.get(option, '')}".rstrip(": ")
            for letter, option in zip(LETTERS, options)
        )
        prompt = f"{state}\n\n{text_of(question.get('instructions'))}\n{lines}\n\nResposta (só a letra):"
        read = self.server.next_token(
            self.model,
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            TOP_LOGPROBS,
            {"seed": 42},
        )
        logprobs = letter_logprobs(read.top_logprobs, LETTERS[: len(options)])
        return dict(zip(options, logprobs)), read.prompt_tokens

    def _verbalized(self, request: dict) -> Logits:
        options = {name: options_of(q) for name, q in request["questions"].items()}
        schema = {
            "type": "object",
            "required": list(request["questions"]),
            "properties": {
                name: {
                    "type": "object",
                    "required": ["probabilidades"],
                    "properties": {
                        "probabilidades": {
                            "type": "object",
                            "required": options[name],
                            "properties": {
                                option: {"type": "number", "minimum": 0, "maximum": 1} for option in options[name]
                            },
                        }
                    },
                }
                for name in request["questions"]
            },
        }
        questions = "\n".join(
            f"[{name}] {text_of(q.get('instructions'))}\n"
            + "\n".join(f"- {o}: {d}" for o, d in descriptions_of(q).items())
            for name, q in request["questions"].items()
        )
        answer = self.server.chat(
            self.model,
            schema=schema,
            options={"temperature": 0.0, "seed": 42, "max_tokens": 32 + 24 * sum(map(len, options.values()))},
            messages=[
                {"role": "system", "content": "Responda cada pergunta com uma probabilidade por opção, em JSON."},
                {"role": "user", "content": f"{request['state']}\n\n{questions}"},
            ],
        )
        self.last_input_tokens = answer.prompt_tokens
        try:
            parsed = json.loads(answer.raw)
        except json.JSONDecodeError:
            parsed = {}  # a cut or broken answer: every option equally unlikely, counted as the model's miss
        out: Logits = {}
        for name in request["questions"]:
            entry = parsed.get(name) if isinstance(parsed, dict) else None
            probabilities = entry.get("probabilidades", {}) if isinstance(entry, dict) else {}
            out[name] = {o: float(np.log(max(_probability(probabilities.get(o)), 1e-6))) for o in options[name]}
        return out


def letter_logprobs(top: dict[str, float], letters: str) -> list[float]:
    """Each letter's log-probability as the first answer token: the listed tokens that read as the
    letter once spaces and a closing ")", "." or ":" are stripped, pooled (logsumexp); a letter not
    listed gets min(the least likely listed token, its even share of the unlisted mass): the most
    it can have."""
    pooled: dict[str, list[float]] = {}
    for token, logprob in top.items():
        letter = token.strip().rstrip(").:")
        if letter in letters and len(letter) == 1 and np.isfinite(logprob):
            pooled.setdefault(letter, []).append(logprob)
    finite = [v for v in top.values() if np.isfinite(v)]
    missing = [letter for letter in letters if letter not in pooled]
    if missing:
        unlisted = max(1.0 - float(np.exp(logsumexp(finite))) if finite else 1.0, 1e-12)
        bound = min(min(finite, default=0.0), float(np.log(unlisted / len(missing))))
    return [float(logsumexp(pooled[letter])) if letter in pooled else bound for letter in letters]


def _probability(value) -> float:
    """A number in [0, 1], or 0 for anything else the model wrote."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return min(max(number, 0.0), 1.0) if np.isfinite(number) else 0.0
