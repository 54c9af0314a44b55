"""The one settings object: defaults < environment (ADRI_*) < explicit overrides (CLI flags, Dagster config)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Real data kept beside the project (never copied into it); tests and benchmarks skip when absent.
SHARED_DATA = Path(os.environ.get("ADRI_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data"))

BackendName = Literal["auto", "ollama", "embedded"]


class Settings(BaseModel):
    warehouse: Path = Field(default=PROJECT_ROOT / "data" / "warehouse" / "adri.duckdb")
    corpus: Path = Field(default=PROJECT_ROOT / "data" / "sample_corpus.jsonl")
    codebook: Path = Field(default=PROJECT_ROOT / "codebooks" / "pilot.yaml")
    coders: Path | None = None  # CSV of human codes (doc_id, variable, value)
    display_language: str = "pt"
    analysis_language: str = "en"

    backend: BackendName = "auto"
    model: str = "qwen2.5:7b-instruct"
    ollama_hosts: list[str] = Field(default_factory=lambda: ["http://127.0.0.1:11434"])
    concurrency: int = Field(default=1, ge=1, le=64)
    request_timeout_s: float = 300.0
    keep_alive: str = "10m"
    num_ctx: int = 8192
    max_text_chars: int = Field(default=20_000, ge=500)  # longer abstracts are cut for the model, with a note
    seed: int = 42
    temperature: float = 0.0
    memory_floor_mb: int = 1024
    # partial results and snapshot republished during long runs (ADR 0011: "a primeira regravação
    # parcial mostrou 256 (206 + 50 novos)")
    results_every_documents: int = Field(default=50, ge=1)
    results_every_minutes: float = Field(default=5.0, gt=0)

    routing_dataset: str = "sample"  # ha-pt-BR, ha-pt, clinc150 (../shared/data) or the project's sample
    routing_candidates: str = "embedded-zeroshot,embedded-logreg"

    mirror_log: Path = Field(default=PROJECT_ROOT / "data" / "mirror" / "sample_shadow_log.jsonl")
    mirror_config: Path = Field(default=PROJECT_ROOT / "data" / "mirror" / "gate.yaml")
    mirror_judges: str = "truth"  # or two judges of different families: ollama:<a>,ollama:<b>

    # asset check thresholds, in percent
    check_min_valid_pct: float = 95.0
    check_min_literal_pct: float = 90.0
    check_min_coverage_pct: float = 80.0

    @property
    def ollama_options(self) -> dict:
        """Part of every cache key: typed once here so 0 and 0.0 never make two keys."""
        return {"temperature": float(self.temperature), "seed": int(self.seed), "num_ctx": int(self.num_ctx)}

    @classmethod
    def load(cls, **overrides) -> "Settings":
        values: dict = {}
        env = os.environ
        for name in cls.model_fields:
            key = "ADRI_" + name.upper()
            if key in env:
                values[name] = env[key].split(",") if name == "ollama_hosts" else env[key]
        if "ollama_hosts" not in values and env.get("OLLAMA_HOST"):
            values["ollama_hosts"] = env["OLLAMA_HOST"].split(",")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
