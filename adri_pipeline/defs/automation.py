"""Declarative automation: assets that only follow their upstream say so themselves, instead of a
sensor chaining jobs.

`AFTER_UPSTREAM` is Dagster's `eager()` with two changes. It triggers on an upstream whose *data
version* changed (or that is requested in the same tick), not on any materialization: a rebuild
with identical content (the same results, the same audits) leaves everything after it alone. And it
does not wait for missing upstream data: the results are rebuilt once any classification partition
(or the codebook) changed and no range run is still in progress, whether that run succeeded, failed
or was stopped — what it wrote is in the ledger. Most documents' partitions are never all
materialized, so "missing upstream" would block forever.
"""

import dagster as dg

_CHANGED = dg.AutomationCondition.data_version_changed() | dg.AutomationCondition.will_be_requested()

AFTER_UPSTREAM = (
    dg.AutomationCondition.in_latest_time_window()
    & dg.AutomationCondition.any_deps_match(_CHANGED).since_last_handled()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("after an upstream's data changed, once no upstream run is in progress")
