"""A run's results as it goes and at its end: the model it classified with, the results rebuilt from
the ledger and their figures, the partial republishing every N documents or M minutes (ADR 0011: "a
primeira regravação parcial mostrou 256 (206 + 50 novos)") and, however the run ends, everything it
changed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.ledger import LEDGER_COLUMNS
from adri_pipeline.classification.prompt import Prompt
from adri_pipeline.classification.results import (
    ClassificationFigures,
    Results,
    assemble_results,
    figures_table,
    summarize,
)
from adri_pipeline.classification.runner import RunReport
from adri_pipeline.warehouse import (
    Warehouse,
    WideColumn,
    publish_results_wide,
    read_documents,
    read_results,
    record_run,
    result_keys,
    store_failures,
    store_figures,
    store_results,
)
from adri_pipeline.warehouse.shared import SharedLedger


@dataclass(frozen=True)
class ModelIdentity:
    """What a run classified with: enough to rebuild its cache keys without loading the model."""

    backend: str
    model: str
    digest: str
    params: dict = field(hash=False)

    @classmethod
    def of(cls, backend) -> "ModelIdentity":
        return cls(backend.name, backend.model, backend.digest, backend.params)


RESULTS_SLICE_ROWS = 5000


def refresh_results(
    warehouse: Warehouse,
    codebook: Codebook,
    model: ModelIdentity,
    doc_ids: list[str] | None = None,
    prompt: Prompt | None = None,
) -> ClassificationFigures:
    """Rebuild results of the given documents (every stored document when None) from the ledger, then
    the figures over everything the (model, codebook) holds. No model call. `prompt`: the run's."""
    documents = read_documents(warehouse, doc_ids)
    for part in documents.iter_slices(RESULTS_SLICE_ROWS):  # a row dict per answer: a slice at a time
        fresh = assemble_results(warehouse, part, codebook, model, prompt)
        store_results(
            warehouse, fresh.values, fresh.documents, model.model, codebook.content_hash, part["doc_id"].to_list()
        )
    figures = figures_of(warehouse, model, codebook)
    store_figures(
        warehouse, figures_table(figures, model.model, codebook.content_hash), model.model, codebook.content_hash
    )
    publish_results_wide(
        warehouse,
        {name: WideColumn(var.definition, is_list=var.type == "list") for name, var in codebook.variables.items()},
    )
    return figures


def figures_of(warehouse: Warehouse, model: ModelIdentity, codebook: Codebook) -> ClassificationFigures:
    """The ADR's figures over everything the (model, codebook) holds."""
    return summarize(Results(*read_results(warehouse, model.model, codebook.content_hash)))


class Checkpoints:
    """When to republish results and the snapshot during a run: after `every` documents or `minutes`
    minutes, whichever comes first — but never sooner than 32 times the last republishing took, so
    the republishings in a run cost 3 % of it at most and the one at its end fits in the 5 % budget
    (rebuilding over a growing warehouse would otherwise make a long run quadratic)."""

    SHARE = 0.03

    def __init__(self, every: int, minutes: float):
        self.every, self.seconds = every, minutes * 60
        self.since, self.last, self.cost = 0, time.monotonic(), 0.0
        self.spent = 0.0  # seconds spent republishing in this run

    def due(self) -> bool:
        self.since += 1
        waited = time.monotonic() - self.last
        if waited < self.cost * (1 - self.SHARE) / self.SHARE:
            return False
        return self.since >= self.every or waited >= self.seconds

    def done(self, started: float) -> None:
        """Record a republishing that began at `started` (time.monotonic())."""
        self.cost = time.monotonic() - started
        self.spent += self.cost
        self.since, self.last = 0, time.monotonic()


def needing_results(
    warehouse: Warehouse, codebook: Codebook, model: ModelIdentity, report: RunReport | None, touched: list[str]
) -> list[str]:
    """Documents whose result rows a run's end must (re)build: answered ones whose rows for this
    (model, codebook) are missing (a label-only codebook edit, a first run) or were built from another
    answer (answered now, or a text replaced by one classified before). A cached rerun of a large
    corpus rebuilds nothing else."""
    if report is None:
        return touched
    built_from = result_keys(warehouse, model.model, codebook.content_hash)
    return [doc_id for doc_id in report.answered if built_from.get(doc_id) != report.keys.get(doc_id)]


class Publishing:
    """A run's results as it goes: partial results and snapshot every so often (ADR 0011: "a primeira
    regravação parcial mostrou 256 (206 + 50 novos)"), then everything the run changed, however it
    ends. With the shared ledger, its answers are pulled into the warehouse before each rebuild."""

    def __init__(self, context: RunContext, model: ModelIdentity, shared: SharedLedger | None):
        self.context, self.model, self.shared = context, model, shared
        self.touched: list[str] = []
        self.unpublished: list[str] = []  # answered since the last republishing: only their rows are rebuilt
        self.checkpoints = Checkpoints(context.settings.results_every_documents, context.settings.results_every_minutes)

    def pulled(self) -> None:
        if self.shared is not None:
            self.shared.pull_into(self.context.warehouse, list(LEDGER_COLUMNS))

    def _rebuild(self, doc_ids: list[str]) -> ClassificationFigures:
        c = self.context
        return refresh_results(c.warehouse, c.codebook, self.model, doc_ids, c.prompt)

    def answered(self, outcome) -> None:
        if outcome.valid:
            self.touched.append(outcome.document.doc_id)
            self.unpublished.append(outcome.document.doc_id)
        if self.checkpoints.due() and self.unpublished:
            begun = time.monotonic()
            self.pulled()
            self._rebuild(list(self.unpublished))
            self.unpublished.clear()
            self.context.warehouse.publish_snapshot()
            self.checkpoints.done(begun)

    def before_any_call(self, start: RunReport) -> None:
        """Answers already in the ledger whose results are missing or stale (a run killed before its
        end, the file's first documents) go into the first partial results, not only the last."""
        if start.answered:  # nothing cached: no stored results to compare with
            self.pulled()
            self.unpublished.extend(
                needing_results(self.context.warehouse, self.context.codebook, self.model, start, [])
            )

    def close(self, report: RunReport | None, run_row) -> tuple[ClassificationFigures, Path]:
        """Failures, results, figures, the run's row and the snapshot, for whatever the run did.
        `run_row(figures)` is the run's `classification_runs` row."""
        c, model, shared = self.context, self.model, self.shared
        begun = time.monotonic()
        if shared is not None and report is not None:  # the shared list of failures is the one pulled
            shared.store_failures(report.answered, report.failed, model.model, c.prompt.signature, run_row.run_id)
        self.pulled()
        needing = needing_results(c.warehouse, c.codebook, model, report, self.touched)
        unchanged = report is not None and not needing and not report.failed and not self.unpublished
        # a cached rerun rebuilds and republishes nothing: the stored results are its results
        figures = figures_of(c.warehouse, model, c.codebook) if unchanged else self._rebuild(needing)
        if report is not None and shared is None:
            store_failures(c.warehouse, report.answered, report.failed, model.model, c.prompt.signature, run_row.run_id)
        row = run_row(figures)
        record_run(c.warehouse, row)
        if shared is not None:
            shared.record_run(row)
        if unchanged and c.warehouse.snapshot_is_current():
            snapshot = c.warehouse.snapshot_path  # this run's row in classification_runs joins it next time
        else:
            snapshot = c.warehouse.publish_snapshot()
        self.checkpoints.done(begun)
        return figures, snapshot
