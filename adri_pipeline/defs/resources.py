"""Dagster resources: the one settings object (config.Settings), configurable from the launchpad."""

from __future__ import annotations

import pathlib
import types
import typing

import dagster as dg
from pydantic import PrivateAttr, create_model

from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse

# The pool of every asset that writes the DuckDB warehouse: DuckDB allows one writer per file, so the
# instance limits it to one (deploy/dagster.yaml, `concurrency: pools: default_limit: 1`).
DUCKDB_WRITER = "duckdb_writer"
# How this code location was deployed: with the shared ledger (ADRI_LEDGER_URL) a range of shards is
# classified as many runs side by side (SCALING.md); without it, one run, the warehouse's writer.
DEPLOYED = Settings.load()  # read once when the code location loads: what the definitions are shaped by
SHARED_LEDGER = bool(DEPLOYED.ledger_url)


class _SettingsResource(dg.ConfigurableResource):
    """Launchpad overrides on top of ADRI_* environment variables; a field left unset (None) keeps the
    environment's or the default value. Settings are built once per run."""

    _settings: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = self._build()

    def _build(self) -> Settings:
        return Settings.load(**{name: getattr(self, name) for name in type(self).model_fields})

    def settings(self) -> Settings:
        return self._settings or self._build()

    def warehouse_access(self) -> Warehouse:
        return Warehouse(self.settings().warehouse)


def _launchpad_type(annotation) -> type:
    """What the launchpad can edit: numbers and booleans as they are; paths, choices and host lists
    as text (host lists comma-separated, as in ADRI_OLLAMA_HOSTS)."""
    if annotation in (int, float, bool):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _launchpad_type(inner[0]) if len(inner) == 1 and inner[0] is not pathlib.Path else str
    return str


# one field per setting, derived: a setting added to config.Settings is on the launchpad with no second list
AdriSettings = create_model(
    "AdriSettings",
    __base__=_SettingsResource,
    __module__=__name__,
    **{name: (_launchpad_type(field.annotation) | None, None) for name, field in Settings.model_fields.items()},
)
