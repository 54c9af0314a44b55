"""The LLM baseline of H1 (`ollama:<model>` or `openai:<model>`): a generative model asked for a
probability per option in its JSON answer. Those probabilities are verbalized — written by the model
as numbers, not read from one forward pass — and the report says so (Kind.confidence)."""

from __future__ import annotations

import json

import numpy as np

from adri_pipeline.jev.contract import RoutingConfigError, descriptions_of, options_of, text_of
from adri_pipeline.routing.candidates import Candidate, Kind, Logits


class LLMCandidate(Candidate):
    kind = Kind("llm_baseline", trains=False, batching="server",
                confidence="verbalized: probabilities the model wrote in its JSON answer")

    def __init__(self, name: str, settings=None, timeout_s: float = 120.0):
        from adri_pipeline.models import chat_server

        self.name, self.settings, self.timeout_s = name, settings, timeout_s
        self.server, self.model = chat_server(name, settings, timeout_s)

    def __getstate__(self) -> dict:
        """Saved as what reaches the server again, not as an open connection."""
        return {"name": self.name, "settings": self.settings, "timeout_s": self.timeout_s}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def loaded_bytes(self) -> int:
        return self.server.model_info(self.model).size_bytes

    def check(self) -> None:
        """Before any work: the server answers and serves the model (a RoutingConfigError names it)."""
        from adri_pipeline.models import ModelMissing, ServerUnreachable, TimedOut

        try:
            self.server.model_info(self.model)
        except (ServerUnreachable, TimedOut) as exc:
            raise RoutingConfigError(f"candidate {self.name}: no server at {self.server.host} ({exc}); "
                                     f"{self.server.start_hint}") from None
        except ModelMissing as exc:
            raise RoutingConfigError(f"candidate {self.name}: {exc}") from None

    def logits(self, request: dict) -> Logits:
        options = {name: options_of(q) for name, q in request["questions"].items()}
        schema = {"type": "object", "required": list(request["questions"]), "properties": {
            name: {"type": "object", "required": ["probabilidades"], "properties": {
                "probabilidades": {"type": "object", "required": options[name], "properties": {
                    option: {"type": "number", "minimum": 0, "maximum": 1} for option in options[name]}}}}
            for name in request["questions"]}}
        questions = "\n".join(
            f"[{name}] {text_of(q.get('instructions'))}\n" + "\n".join(
                f"- {o}: {d}" for o, d in descriptions_of(q).items())
            for name, q in request["questions"].items())
        answer = self.server.chat(
            self.model, schema=schema,
            options={"temperature": 0.0, "seed": 42, "max_tokens": 32 + 24 * sum(map(len, options.values()))},
            messages=[{"role": "system", "content": "Responda cada pergunta com uma probabilidade por opção, em JSON."},
                      {"role": "user", "content": f"{request['state']}\n\n{questions}"}])
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


def _probability(value) -> float:
    """A number in [0, 1], or 0 for anything else the model wrote."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return min(max(number, 0.0), 1.0) if np.isfinite(number) else 0.0
