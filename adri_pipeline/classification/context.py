"""What one classification run, or one read of its results, works on (ADR 0011's run: one codebook,
one fixed system message, one warehouse, one shared ledger), so that no step below reloads the
codebook, rebuilds the prompt or opens a warehouse or a ledger of its own. The entry points build it
once (the CLI, the application module, the assets, the demo) and every path below carries it: an
asset after `prompt_signature` then computes on the codebook it recorded, never the file as it is now."""

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
    written), the prompt built from it and the shared ledger (ADRI_LEDGER_URL; None: the warehouse's
    own ledger). A read path asks `warehouse.existing()` when a missing warehouse is an error to it."""

    settings: Settings
    warehouse: Warehouse
    codebook: Codebook
    prompt: Prompt
    shared: SharedLedger | None = None

    @classmethod
    def load(cls, settings: Settings, codebook: Codebook | None = None) -> "RunContext":
        """`codebook`: one read already (an asset's: the one its upstream recorded); else the settings' file."""
        codebook = codebook or load_codebook(settings.codebook)
        return cls(settings, Warehouse(settings.warehouse), codebook, build_prompt(codebook), shared_ledger(settings))


def shared_ledger(settings: Settings) -> SharedLedger | None:
    """The PostgreSQL ledger many runs commit to (ADRI_LEDGER_URL), or None: the warehouse's own."""
    return SharedLedger(settings.ledger_url, lease_s=settings.lease_s) if settings.ledger_url else None
