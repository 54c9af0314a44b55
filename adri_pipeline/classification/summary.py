"""What one classification run did, as `adri classify` prints it and as JSON for whoever reads it
next: a typed summary of the run (ClassificationRun) and the corpus it read."""

from __future__ import annotations

import json

from pydantic import BaseModel

from adri_pipeline.classification.results import ClassificationFigures, figures_lines

SHOWN_SKIPS = 20  # duplicate rows named in the summary; the count is always whole


class Estimate(BaseModel):
    """ADR 0011: "--estimar classifica 5 documentos e projeta o tempo do resto"."""

    sampled: int
    remaining_documents: int
    slots: int  # every server slot the run fills, not only ADRI_CONCURRENCY
    seconds_per_document_median: float
    seconds_per_document_p90: float
    projected_hours_median: float
    projected_hours_p90: float


class ClassificationSummary(BaseModel):
    model: str
    codebook: str
    codebook_version: str
    codebook_hash: str
    corpus_documents: int
    excluded_no_abstract: int
    selected: int
    cached: int
    classified_now: int
    model_calls: int
    requests: int
    failed: int
    wall_seconds: float
    publishing_seconds: float
    results: ClassificationFigures  # the ADR's figures
    warehouse: str
    snapshot: str
    all_failed: bool
    stopped: str = ""
    failed_documents: list[tuple[str, str]] = []
    replaced_documents: list[str] = []
    # rows of the corpus read now that repeat a paper already read (same id or DOI, same text), each
    # "file: line N: duplicate of 'id' by DOI ... (where), same text, skipped"; the first SHOWN_SKIPS
    duplicates_skipped: int = 0
    duplicate_rows: list[str] = []
    estimate: Estimate | None = None

    @property
    def interrupted(self) -> bool:
        return self.stopped.startswith("interrupted")

    def lines(self) -> list[str]:
        lines = [
            f"model {self.model}  codebook {self.codebook} v{self.codebook_version} ({self.codebook_hash})",
            f"documents: {self.corpus_documents} in corpus ({self.excluded_no_abstract} excluded: no abstract); "
            f"selected {self.selected}, cached {self.cached}, classified now {self.classified_now}, failed "
            f"{self.failed}, model calls {self.model_calls} ({self.requests} requests sent), {self.wall_seconds} s "
            f"(republishing results and snapshot {self.publishing_seconds} s)",
            *self._duplicate_lines(),
            *figures_lines(self.results),
        ]
        if self.estimate:
            e = self.estimate
            lines.append(
                f"estimate: the {e.remaining_documents} documents left would take about "
                f"{_duration(e.projected_hours_median)} ({_duration(e.projected_hours_p90)} at the slow end), "
                f"from {e.sampled} sampled at {e.seconds_per_document_median:g} s per document (median; "
                f"{e.seconds_per_document_p90:g} s p90) on {e.slots} parallel slot(s)"
            )
        for key in ("stopped", "failed_documents", "replaced_documents"):
            value = getattr(self, key)
            if value:
                shown = value.model_dump() if isinstance(value, BaseModel) else value
                lines.append(f"{key}: {json.dumps(shown, ensure_ascii=False)}")
        return lines + [f"warehouse: {self.warehouse}", f"analyst snapshot: {self.snapshot}"]

    def _duplicate_lines(self) -> list[str]:
        """The rows skipped as repeats of a paper already read: a corpus that repeats a DOI with the same
        text is not wrong, but its reader should know which rows did not count."""
        if not self.duplicates_skipped:
            return []
        more = self.duplicates_skipped - len(self.duplicate_rows)
        return (
            [
                f"duplicates skipped: {self.duplicates_skipped} row(s) repeat a paper already read (same id or "
                "DOI, same text)"
            ]
            + [f"  {row}" for row in self.duplicate_rows]
            + ([f"  ... and {more} more"] if more else [])
        )


def _duration(hours: float) -> str:
    minutes = hours * 60
    return f"{minutes * 60:.0f} s" if minutes < 1 else f"{minutes:.0f} min" if minutes < 90 else f"{hours:.1f} h"


def summarize_run(run, corpus, warehouse: str, estimate: bool = False) -> ClassificationSummary:
    """`run` (service.ClassificationRun) over `corpus` (corpus.Corpus)."""
    report = run.report
    summary = ClassificationSummary(
        model=run.model.model,
        codebook=run.codebook.name,
        codebook_version=str(run.codebook.version),
        codebook_hash=run.codebook.content_hash[:12],
        corpus_documents=corpus.documents.height,
        excluded_no_abstract=int(corpus.coverage["excluded_no_abstract"].sum()),
        selected=report.documents,
        cached=report.cached,
        classified_now=report.classified,
        model_calls=report.model_calls,
        requests=report.requests,
        failed=len(report.failed),
        wall_seconds=round(run.wall_seconds, 2),
        publishing_seconds=round(run.publishing_seconds, 2),
        results=run.figures,
        warehouse=warehouse,
        snapshot=str(run.snapshot),
        all_failed=report.all_failed,
        stopped=report.stopped,
        failed_documents=report.failed[:20],
        replaced_documents=run.replaced_documents,
        duplicates_skipped=len(corpus.skipped),
        duplicate_rows=corpus.skipped[:SHOWN_SKIPS],
    )
    if estimate and report.seconds:
        from adri_pipeline.jev.metrics import percentiles

        median, p90 = percentiles(report.seconds, (50, 90)).values()
        remaining, slots = report.to_classify - report.sampled, report.slots
        summary.estimate = Estimate(
            sampled=len(report.seconds),
            remaining_documents=remaining,
            slots=slots,
            seconds_per_document_median=round(median, 3),
            seconds_per_document_p90=round(p90, 3),
            projected_hours_median=round(remaining * median / 3600 / slots, 4),
            projected_hours_p90=round(remaining * p90 / 3600 / slots, 4),
        )
    return summary
