"""Declarative automation: assets that only follow their upstream say so themselves, instead of a
sensor chaining jobs.

`AFTER_UPSTREAM` is Dagster's `eager()` without its wait for missing upstream data: the results are
rebuilt once any classification partition (or the codebook) was updated and no range run is still
in progress, whether that run succeeded, failed or was stopped — what it wrote is in the ledger. Most
documents' partitions are never all materialized, so "missing upstream" would block forever.
"""

import dagster as dg

AFTER_UPSTREAM = (
    dg.AutomationCondition.eager()
    .without(~dg.AutomationCondition.any_deps_missing())
    .with_label("after any upstream update, once no upstream run is in progress")
)
