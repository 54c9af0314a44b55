"""The canonical example: one typed decision with its state, options and gold label."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

NO_MATCH = "sem_correspondencia"
TAXONOMY_VERSION = "ha-intents-2026.11+clinc150"
Task = Literal["D1", "D2", "D3", "D4", "D5"]


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["usuario", "agente"]
    text: str
    agent: str | None = None


class Session(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: str
    topic: str
    turns: list[Turn] = Field(default_factory=list)


class State(BaseModel):
    model_config = ConfigDict(extra="forbid")
    active_agent: str | None = None
    suspended_sessions: list[Session] = Field(default_factory=list)
    recent_turns: list[Turn] = Field(default_factory=list)
    eligible_intents: list[str] = Field(default_factory=list)


class Metadata(BaseModel):
    model_config = ConfigDict(extra="forbid")
    taxonomy_version: str = TAXONOMY_VERSION
    domain: str = ""
    language: str = "pt-BR"
    source: str = ""
    length_bucket: Literal["curto", "medio", "longo"] = "medio"
    ambiguity: Literal["baixa", "alta"] = "baixa"
    turn_index: int = 0
    adversarial: list[str] = Field(default_factory=list)
    n_options: int = 0
    token_counts: dict[str, int] = Field(default_factory=dict)
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
    gold_label: str | list[str]  # D4: the options answered "sim"
    metadata: Metadata = Field(default_factory=Metadata)


def length_bucket(text: str) -> str:
    words = len(text.split())
    return "curto" if words <= 3 else "medio" if words <= 10 else "longo"
