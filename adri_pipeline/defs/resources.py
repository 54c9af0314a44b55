"""Dagster resources: the one settings object and the warehouse, configured from the launchpad."""

import dagster as dg

from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse


class AdriSettings(dg.ConfigurableResource):
    """Overrides on top of ADRI_* environment variables; empty means 'keep the default'."""

    warehouse: str = ""
    corpus: str = ""
    codebook: str = ""
    backend: str = ""
    model: str = ""
    ollama_hosts: str = ""
    concurrency: int = 0
    routing_dataset: str = ""
    mirror_log: str = ""

    def settings(self) -> Settings:
        overrides = {
            "warehouse": self.warehouse or None, "corpus": self.corpus or None,
            "codebook": self.codebook or None, "backend": self.backend or None,
            "model": self.model or None, "concurrency": self.concurrency or None,
            "ollama_hosts": self.ollama_hosts.split(",") if self.ollama_hosts else None,
            "routing_dataset": self.routing_dataset or None,
            "mirror_log": self.mirror_log or None,
        }
        return Settings.load(**overrides)

    def warehouse_access(self) -> Warehouse:
        return Warehouse(self.settings().warehouse)
