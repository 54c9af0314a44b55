"""The Dagster code location: each domain's definitions (defs/<domain>/) merged, with the shared resources."""

import dagster as dg

from adri_pipeline.defs import classification, mirror, reports, routing
from adri_pipeline.defs.io_managers import DuckDBContentHashIOManager
from adri_pipeline.defs.resources import AdriSettings

_settings = AdriSettings()

defs = dg.Definitions.merge(
    classification.defs,
    routing.defs,
    mirror.defs,
    reports.defs,
    dg.Definitions(
        resources={"adri": _settings, "content_hash_io_manager": DuckDBContentHashIOManager(adri=_settings)}
    ),
)
