"""`sparrow` (or `sparrow:<model>`, e.g. `sparrow:nano-robot`): sparrow-decider in this process — a
few-MB System One model (Apache-2.0, numpy only, weights inside the wheel), the first real
typed-decision model that runs here offline. It reads the serialized state and each question as it
travels on the wire and answers from one forward pass: its probabilities are a softmax over the
options, not text. It learns nothing from dev; its temperature is fitted on calibration like every
candidate's. The same model over its own server is `jev:<url>` against `sparrow-decider serve`."""

from __future__ import annotations

import math
from pathlib import Path

from adri_pipeline.jev.contract import NO, YES, descriptions_of, options_of, text_of
from adri_pipeline.routing.candidates import Candidate, Kind, Logits


class SparrowCandidate(Candidate):
    kind = Kind(
        "candidate",
        trains=False,
        batching="in_process",
        confidence="sparrow-decider's softmax over the options (one forward pass)",
        precision="sparrow-decider: 8-bit embedding rows, float32 layers",
    )

    def __init__(self, name: str = "sparrow", *, encoder=None, settings=None):
        from sparrow_decider import Decider

        super().__init__(name)
        self.model = name.partition(":")[2] or None  # None: the bundled default (sparrow-nano-general)
        self.decider = Decider.load(self.model)
        self.token_limit = self.decider.static.max_len
        self.counted_by = f"sparrow-decider's word pieces ({self.token_limit} per text)"

    def count_tokens(self, text: str) -> int:
        return len(self.decider.static.tok.encode(text, len(text) + 2))

    def __getstate__(self) -> dict:
        """Saved as the model's name: a cold run loads the weights anew."""
        return {"name": self.name}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["name"])

    def loaded_bytes(self) -> int:
        from sparrow_decider import _resolve

        return Path(_resolve(self.model)).stat().st_size

    def input_tokens(self, request: dict) -> int:
        return len(self.decider.tok.encode(text_of(request["state"]))) if self.decider.tok else 0

    def logits(self, request: dict) -> Logits:
        state = text_of(request["state"])
        out: Logits = {}
        for name, question in request["questions"].items():
            asked = {"type": question["type"], "instructions": text_of(question.get("instructions"))}
            descriptions = descriptions_of(question)
            if question["type"] == "noul":
                asked["criteria"] = {"true": descriptions[YES], "false": descriptions[NO]}
            elif question["type"] == "choice":
                asked["criteria"] = descriptions
            else:
                asked["criteria"] = list(descriptions.values())
            *_, p = self.decider.probs(state, asked)
            if question["type"] == "noul":  # sparrow's order: false, true
                out[name] = {NO: math.log(max(float(p[0]), 1e-12)), YES: math.log(max(float(p[1]), 1e-12))}
            else:
                out[name] = {option: math.log(max(float(x), 1e-12)) for option, x in zip(options_of(question), p)}
        return out
