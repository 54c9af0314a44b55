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
SHAPES_THE_DEFINITIONS = ("ledger_url", "shards_per_run")  # read from DEPLOYED by the definitions


class _SettingsResource(dg.ConfigurableResource):
    """Launchpad overrides on top of ADRI_* environment variables; a field left unset (None) keeps the
    environment's or the default value. Settings are built once per run."""

    _settings: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = self._build()
        if context.run is not None:  # a run, not a sensor's evaluation
            self._refuse_what_the_deployment_was_not_built_for()

    def _refuse_what_the_deployment_was_not_built_for(self) -> None:
        """The definitions (pools, backfill policy, schedule targets, sensors) were shaped by the
        code location's settings when it loaded (DEPLOYED); a launchpad value that disagrees with one
        of them would run one deployment under the rules of another, so the run is refused, both named."""
        for name in SHAPES_THE_DEFINITIONS:
            given, deployed = getattr(self, name), getattr(DEPLOYED, name)
            if given is not None and getattr(self._settings, name) != deployed:
                raise dg.Failure(
                    f"launchpad {name} = {given!r} differs from the deployment's {deployed!r}, which "
                    "this code location's definitions were built with (pools, backfill policy, schedules, "
                    f"sensors): set ADRI_{name.upper()} where the code location runs and reload it, or "
                    "leave the field empty"
                )

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
