"""`jev:<url>[#<model>]`: any System One server as a routing candidate — Laya (laya-serve),
sparrow-decider, jigor, Rizzo Flow, TypeSafe's hosted Jev, or a candidate this project serves
(`adri routing serve`). One request per decision, as the orchestrator would send it; a D4 turn's
yes/no questions travel in that one request, as the wire allows.

An answer that breaks the spec (jev/contract.check_response) is discarded and counted: that decision
has no answer, and the benchmark scores it wrong at confidence 0 — what production would get is the
fallback, never the broken answer. A busy, failing or timed-out request is discarded the same way;
a server that cannot be reached stops the run, naming it.

A server that says its traffic has drifted (`x_drift.drifted`, as `adri routing serve` does) answers
the abstention option at probability 1: that is "leave it to the rule", not a routing it stands
behind, so it is read as an abstention without confidence (uniform, the abstention option first),
never as a confidently wrong route."""

from __future__ import annotations

import math

from adri_pipeline.jev.contract import DEFAULT_MODEL, NO, RoutingConfigError, check_response
from adri_pipeline.models import base
from adri_pipeline.models.systemone import InvalidResponse, SystemOneServer
from adri_pipeline.routing.candidates import ABSTAIN_OPTIONS, Candidate, Kind, Logits

PROBE = {
    "model": DEFAULT_MODEL,
    "state": "Contexto:\nAgente ativo: nenhum\nMensagem: olá",
    "questions": {"probe": {"type": "noul", "instructions": "A mensagem é um cumprimento?"}},
}


class SystemOneCandidate(Candidate):
    kind = Kind(
        "candidate",
        trains=False,
        batching="server",
        confidence="the server's probabilities (System One answer)",
        precision="the server's: the System One API does not report it",
    )

    def __init__(self, name: str, *, encoder=None, settings=None, timeout_s: float = 30.0):
        super().__init__(name)
        self.timeout_s = timeout_s
        try:
            self.server = SystemOneServer(name, timeout_s)
        except ValueError as exc:
            raise RoutingConfigError(f"candidate {exc}") from None
        self.last_invalid: dict[str, str] = {}

    def __getstate__(self) -> dict:
        return {"name": self.name, "timeout_s": self.timeout_s}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["name"], timeout_s=state["timeout_s"])

    def check(self) -> None:
        """Before any work: the server answers a one-question request for the model named. A broken
        answer does not stop the run (it is counted, answer by answer); no server or no model does."""
        try:
            self.server.ask(PROBE)
        except (base.ServerUnreachable, base.TimedOut) as exc:
            raise RoutingConfigError(
                f"candidate {self.name}: no System One server at {self.server.host} ({exc}); {self.server.start_hint}"
            ) from None
        except base.ModelMissing as exc:
            raise RoutingConfigError(f"candidate {self.name}: {exc}") from None
        except (base.ServerError, base.Overloaded, InvalidResponse):
            pass

    def logits(self, request: dict) -> Logits:
        try:
            answered = self.server.ask(request)
        except (base.ServerUnreachable, base.ModelMissing) as exc:
            raise RoutingConfigError(f"candidate {self.name}: {exc}") from None
        except (base.TimedOut, base.Overloaded, base.ServerError, InvalidResponse) as exc:
            self.last_invalid = {name: str(exc) for name in request["questions"]}
            self.last_input_tokens = 0
            return {}
        usable, self.last_invalid = check_response(request, answered.body)
        self.last_input_tokens = int(answered.body["usage"]["input_tokens"]) if usable else 0
        if (answered.body.get("x_drift") or {}).get("drifted"):
            return {name: _abstained(list(reading.probabilities)) for name, reading in usable.items()}
        return {
            name: {option: math.log(max(p, 1e-9)) for option, p in reading.probabilities.items()}
            for name, reading in usable.items()
        }


def _abstained(options: list[str]) -> dict[str, float]:
    """Every option alike, the abstention option (or a yes/no's "nao") a hair ahead so that it is the
    answer: the confidence is 1 / len(options), under any threshold."""
    abstain = next((o for o in (*ABSTAIN_OPTIONS, NO) if o in options), None)
    return {option: 1e-6 * (option == abstain) for option in options}
