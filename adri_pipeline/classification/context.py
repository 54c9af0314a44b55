"""What one classification run reads once and carries down (ADR 0011's run: one codebook, one fixed
system message, one warehouse), so that no step below reloads the codebook, rebuilds the prompt or
opens a warehouse of its own: the CLI, the assets, the coders' training and the demo all start here."""

from __future__ import annotations

from dataclasses import dataclass

from adri_pipeline.classification.codebook import Codebook, load_codebook
from adri_pipeline.classification.prompt import Prompt, build_prompt
from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse
from adri_pipeline.warehouse.shared import SharedLedger


@dataclass(frozen=True)
class RunContext:
    """A run's settings, its warehouse, the codebook (validated: bad input fails before anything is
    written) and the prompt built from it."""

    settings: Settings
    warehouse: Warehouse
    codebook: Codebook
    prompt: Prompt

    @classmethod
    def load(cls, settings: Settings, codebook: Codebook | None = None) -> "RunContext":
        """`codebook`: one read already (an asset's: the one its upstream recorded); else the settings' file."""
        codebook = codebook or load_codebook(settings.codebook)
        return cls(settings, Warehouse(settings.warehouse), codebook, build_prompt(codebook))


def shared_ledger(settings: Settings) -> SharedLedger | None:
    """The PostgreSQL ledger many runs commit to (ADRI_LEDGER_URL), or None: the warehouse's own."""
    return SharedLedger(settings.ledger_url, lease_s=settings.lease_s) if settings.ledger_url else None
