"""The one settings object: defaults < environment (ADRI_*, and OLLAMA_HOST) < explicit overrides
(CLI flags, the Dagster resource). Built on pydantic-settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# the source checkout (tests, benchmarks, the Dagster workspace); an installed package never needs it
PROJECT_ROOT = Path(__file__).resolve().parent.parent
# what the package ships and reads, installed or not: the pilot codebook, the jev-compat-v1 schemas
# and frozen test splits, the sample corpus, routing catalogue, mirror log and the coders' file
BUNDLED = Path(__file__).resolve().parent / "bundled"


def _shipped(folder: str) -> Path:
    """A top-level folder of the repository (codebooks/, contracts/, data/): read from the checkout, or
    from the copy the build puts inside the wheel (setup.py), so `pip install .` works anywhere."""
    inside = BUNDLED / folder
    return inside if inside.is_dir() and any(inside.iterdir()) else PROJECT_ROOT / folder


CODEBOOKS = _shipped("codebooks")
CONTRACTS = _shipped("contracts")
DATA = _shipped("data")
PILOT_CODEBOOK = CODEBOOKS / "pilot.yaml"
SAMPLE_CORPUS = DATA / "sample_corpus.jsonl"
ROUTING_PRICES = BUNDLED / "routing" / "prices.toml"  # hourly price per machine shape (routing H3)
# Real data kept beside the project (never copied into it); tests and benchmarks skip when absent.
SHARED_DATA = Path(os.environ.get("ADRI_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data"))

DEFAULT_MAX_TEXT_CHARS = 20_000  # ~5,000 tokens of Portuguese: fits num_ctx 8192 beside the codebook

BackendName = Literal["auto", "ollama", "openai", "embedded"]


def _existing(path: Path) -> Path | None:
    return path if path.is_file() else None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ADRI_", extra="forbid", populate_by_name=True)

    # outputs go under the folder the command runs in (the repository, for `make demo`)
    warehouse: Path = Field(default_factory=lambda: Path.cwd() / "data" / "warehouse" / "adri.duckdb")
    corpus: Path = SAMPLE_CORPUS
    codebook: Path = PILOT_CODEBOOK
    coders: Path | None = None  # CSV of human codes (doc_id, variable, value, evidencia); trains the embedded model
    # where the coded documents' texts are when the warehouse lacks them (default: the corpus)
    coders_corpus: Path | None = None
    # ids reserved for independent evaluation: never trained on, never suggested for coding
    holdout: Path | None = Field(default_factory=lambda: _existing(SHARED_DATA / "corpus" / "holdout_ids.txt"))
    # the shared ledger (PostgreSQL) many classification runs commit to at once, e.g.
    # postgresql://adri@db:5432/adri; unset, the warehouse's own ledger (one machine, one writer)
    ledger_url: str | None = None
    # shards per classification run when the shared ledger cuts a range into runs (SCALING.md)
    shards_per_run: int = Field(default=32, ge=1, le=256)
    display_language: str = "pt"
    analysis_language: str = "en"

    # the model whose results the panel, checks and review pages show (ADR 0011 point 8), as its results
    # are named (e.g. "ollama:qwen2.5:7b-instruct"); unset, the latest run's model
    principal_model: str | None = None
    backend: BackendName = "auto"
    model: str = "qwen2.5:7b-instruct"
    # "http://gpu1:11434*4,http://gpu2:11434": hosts with their parallel slots (OLLAMA_NUM_PARALLEL)
    ollama_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["http://127.0.0.1:11434"],
        validation_alias=AliasChoices("ollama_hosts", "ADRI_OLLAMA_HOSTS", "OLLAMA_HOST"))
    # OpenAI-compatible servers (llama-server, vLLM, LM Studio): "http://a:8000/v1*16,http://b:8000/v1*16"
    openai_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["http://127.0.0.1:8080/v1"],
        validation_alias=AliasChoices("openai_hosts", "ADRI_OPENAI_HOSTS", "OPENAI_BASE_URL"))
    # answer length cap for OpenAI-compatible servers: a grammar that allows whitespace lets a small
    # model pad its JSON for hundreds of tokens. Gemma 3 270M filled six 200-character quotes with digits
    # in ~1,400 tokens (cut at 1,024), so 2,048 lets even that answer end and be audited
    max_tokens: int = Field(default=2048, ge=64)
    concurrency: int = Field(default=1, ge=1, le=64)
    request_timeout_s: float = 300.0
    keep_alive: str = "10m"
    num_ctx: int = 8192
    max_text_chars: int = Field(default=DEFAULT_MAX_TEXT_CHARS, ge=500)  # longer abstracts are cut for the model, with a note
    seed: int = 42
    temperature: float = 0.0
    memory_floor_mb: int = 1024
    # partial results and snapshot republished during long runs (ADR 0011: "a primeira regravação
    # parcial mostrou 256 (206 + 50 novos)")
    results_every_documents: int = Field(default=50, ge=1)
    results_every_minutes: float = Field(default=5.0, gt=0)

    routing_dataset: str = "sample"  # ha-pt-BR, ha-pt, clinc150 (../shared/data) or the project's sample
    routing_candidates: str = "embedded-zeroshot,embedded-logreg,sparrow"
    routing_prices: Path = ROUTING_PRICES  # a team's own price table: ADRI_ROUTING_PRICES
    # cold performance runs per candidate, each its own process (the JEV design: at least three)
    routing_performance_runs: int = Field(default=3, ge=0, le=20)

    mirror_log: Path = DATA / "mirror" / "sample_shadow_log.jsonl"
    mirror_config: Path = DATA / "mirror" / "gate.yaml"
    mirror_judges: str = "truth"  # or two judges of different families: ollama:<a>,ollama:<b>
    # minimum shadow evidence before a point may be recommended for promotion (mirror/evaluate.py)
    mirror_min_shadow_days: int = Field(default=2, ge=1)
    mirror_min_agreed_cases: int = Field(default=50, ge=1)

    # asset check thresholds, in percent
    check_min_valid_pct: float = 95.0
    check_min_literal_pct: float = 90.0
    check_min_coverage_pct: float = 80.0

    @field_validator("ollama_hosts", "openai_hosts", mode="before")
    @classmethod
    def _comma_separated(cls, value):
        return [h.strip() for h in value.split(",") if h.strip()] if isinstance(value, str) else value

    def hosts_for(self, provider: str) -> list[str]:
        """The configured hosts (with their '*slots') of a model provider: 'ollama' or 'openai'."""
        return self.openai_hosts if provider == "openai" else self.ollama_hosts

    @property
    def model_server(self) -> str:
        """Which model server(s) a run asks: what the run queue limits runs per (deploy/dagster.yaml)."""
        if self.backend in ("ollama", "openai"):
            return f"{self.backend} " + ",".join(h.split("*")[0] for h in self.hosts_for(self.backend))
        return self.backend

    def model_options(self, provider: str) -> dict:
        """Everything besides model and prompt that changes an answer; part of every cache key."""
        if provider == "openai":
            return {"temperature": float(self.temperature), "seed": int(self.seed), "max_tokens": int(self.max_tokens)}
        return self.ollama_options

    @property
    def ollama_options(self) -> dict:
        """Part of every cache key: typed once here so 0 and 0.0 never make two keys."""
        return {"temperature": float(self.temperature), "seed": int(self.seed), "num_ctx": int(self.num_ctx)}

    @classmethod
    def load(cls, **overrides) -> "Settings":
        """Explicit overrides (None = not given) on top of the environment and the defaults."""
        return cls(**{k: v for k, v in overrides.items() if v is not None})
