"""Dagster resources: the one settings object, configured from the launchpad."""

from __future__ import annotations

import dagster as dg
from pydantic import PrivateAttr

from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse


class AdriSettings(dg.ConfigurableResource):
    """Launchpad overrides on top of ADRI_* environment variables; a field left unset (None) keeps the
    environment's or the default value. Settings are built once per run."""

    warehouse: str | None = None
    corpus: str | None = None
    codebook: str | None = None
    coders: str | None = None
    coders_corpus: str | None = None  # where the coded documents' texts are, if not in the warehouse
    holdout: str | None = None  # ids never trained on or suggested (default ../shared/data/corpus/holdout_ids.txt)
    backend: str | None = None
    model: str | None = None
    ollama_hosts: str | None = None  # comma-separated, as ADRI_OLLAMA_HOSTS
    concurrency: int | None = None
    routing_dataset: str | None = None
    mirror_log: str | None = None
    _settings: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = self._build()

    def _build(self) -> Settings:
        return Settings.load(**{name: getattr(self, name) for name in type(self).model_fields})

    def settings(self) -> Settings:
        return self._settings or self._build()

    def warehouse_access(self) -> Warehouse:
        return Warehouse(self.settings().warehouse)
