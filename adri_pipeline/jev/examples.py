"""The canonical example, exactly as the JEV design section 3 writes it: one typed decision with its state,
options and gold label, plus optional annotation fields (section 4: two annotators, a justification,
an adjudicated label).

Fields a run fills (`metadata.n_tokens`) and the metadata that describes slices are optional in a
team's file; keys a team adds inside `metadata` (e.g. `synthetic`, `author`, `source`) are kept and
can be used as slices; any unknown key elsewhere is an error.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

NO_MATCH = "sem_correspondencia"
TAXONOMY_VERSION = "ha-intents-2026.11+clinc150"
# "No primeiro ciclo, cada questão tem no máximo 20 opções, incluindo sem_correspondencia"
MAX_OPTIONS = 20
Task = Literal["D1", "D2", "D3", "D4", "D5"]
Label = str | list[str]


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "agent"]
    text: str
    agent_id: str | None = None  # who answered (agent turns) or whom the user was talking to


class State(BaseModel):
    model_config = ConfigDict(extra="forbid")
    active_agent: str | None = None
    suspended_sessions: list[str] = Field(default_factory=list)  # agent ids
    recent_turns: list[Turn] = Field(default_factory=list)
    eligible_intents: list[str] = Field(default_factory=list)


class Metadata(BaseModel):
    """Declared fields describe the slices; a team's own keys are kept (extra="allow")."""

    model_config = ConfigDict(extra="allow")
    taxonomy_version: str = TAXONOMY_VERSION
    domain: str = ""
    length_bucket: Literal["curto", "medio", "longo"] | None = None
    ambiguity: Literal["baixa", "media", "alta"] | None = None
    turn_index: int | None = None
    adversarial: list[str] = Field(default_factory=list)
    n_options: int | None = None
    n_tokens: dict[str, int] = Field(default_factory=dict)  # per candidate, filled by a run
    language: str = "pt-BR"
    source: str = ""
    synthetic: bool = False


class CanonicalExample(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    group_id: str
    task: Task
    state: State
    utterance: str
    question: str
    question_type: Literal["noul", "choice", "score"]
    options: dict[str, str]  # option -> description
    gold_label: Label  # D4: the options answered "sim"
    metadata: Metadata = Field(default_factory=Metadata)
    annotator_labels: list[Label] = Field(default_factory=list)  # two independent annotators, in order
    justification: str | None = None
    adjudicated_label: Label | None = None

    @model_validator(mode="after")
    def _gold_among_options(self) -> "CanonicalExample":
        golds = self.gold_label if isinstance(self.gold_label, list) else [self.gold_label]
        offered = {"sim", "nao"} if self.question_type == "noul" and self.task != "D4" else set(self.options)
        missing = [g for g in golds if g not in offered]
        if missing:
            raise ValueError(f"gold_label {missing[0]!r} is not among the options {sorted(offered)}")
        if len(self.options) > MAX_OPTIONS:
            raise ValueError(
                f"{len(self.options)} options: the JEV design allows at most {MAX_OPTIONS} per question "
                "(sem_correspondencia included) in its first cycle"
            )
        return self


def length_bucket(text: str) -> str:
    words = len(text.split())
    return "curto" if words <= 3 else "medio" if words <= 10 else "longo"
