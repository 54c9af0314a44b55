"""The per-document loop: cache lookup, model call, validation, one retry, commit, progress.

A document reaches the ledger only with a valid answer; one without is reported and retried on the
next run. Ctrl+C stops taking new documents, keeps what was committed and still writes the results.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import polars as pl

from adri_pipeline.backends.base import Backend, BackendError, BackendResponse, Document, DocumentFailed
from adri_pipeline.cache import Ledger, document_keys
from adri_pipeline.codebook import Codebook
from adri_pipeline.prompt import Prompt, build_prompt, build_retry_message
from adri_pipeline.audit import TextIndex
from adri_pipeline.validation import CheckedResponse, check_response, codebook_examples_text
from adri_pipeline.warehouse import Warehouse

log = logging.getLogger(__name__)

ESTIMATE_SAMPLE = 5


@dataclass
class Attempt:
    response: BackendResponse
    checked: CheckedResponse


@dataclass
class DocumentOutcome:
    document: Document
    key: str
    attempts: list[Attempt]
    kept: int  # index into attempts
    retry_message: str = ""

    @property
    def valid(self) -> bool:
        return self.attempts[self.kept].checked.valid

    def ledger_record(self, backend: Backend, prompt: Prompt) -> dict:
        kept = self.attempts[self.kept]
        return {
            "cache_key": self.key, "doc_id": self.document.doc_id, "model": backend.model,
            "model_digest": backend.digest, "backend": backend.name, "signature": prompt.signature,
            "prompt_version": prompt.prompt_version,
            "params": json.dumps(backend.params, sort_keys=True),
            "response": json.dumps(kept.checked.content, ensure_ascii=False),
            "audit": json.dumps({k: a.as_dict() for k, a in kept.checked.audits.items()}, ensure_ascii=False),
            "attempts": len(self.attempts), "valid_first_try": self.attempts[0].checked.valid,
            "seconds": sum(a.response.seconds for a in self.attempts),
            "prompt_tokens": sum(a.response.prompt_tokens for a in self.attempts),
            "completion_tokens": sum(a.response.completion_tokens for a in self.attempts),
        }


@dataclass
class RunReport:
    model: str
    documents: int
    cached: int = 0
    classified: int = 0
    model_calls: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    to_classify: int = 0
    stopped: str = ""  # why the run stopped early, if it did


def as_documents(frame: pl.DataFrame) -> list[Document]:
    return [Document(r["doc_id"], r["title"] or "", r["abstract"], r["text"])
            for r in frame.select("doc_id", "title", "abstract", "text").iter_rows(named=True)]


def classify_document(
    document: Document, key: str, codebook: Codebook, prompt: Prompt, backend: Backend, examples: str
) -> DocumentOutcome:
    index = TextIndex(document.abstract)
    first = backend.classify(prompt, document)
    attempts = [Attempt(first, check_response(first.content, codebook, prompt, index, examples))]
    outcome = DocumentOutcome(document, key, attempts, kept=0)
    if not attempts[0].checked.valid:
        outcome.retry_message = build_retry_message(attempts[0].checked.problems)
        previous = first.raw or json.dumps(first.content, ensure_ascii=False)
        second = backend.classify(prompt, document, retry=(previous, outcome.retry_message))
        attempts.append(Attempt(second, check_response(second.content, codebook, prompt, index, examples)))
        # min() keeps the first attempt on a tie
        outcome.kept = min(range(2), key=lambda i: attempts[i].checked.badness())
    return outcome


def classify_corpus(
    documents: pl.DataFrame,
    codebook: Codebook,
    backend: Backend,
    warehouse: Warehouse,
    *,
    limit: int | None = None,
    estimate: bool = False,
    concurrency: int = 1,
    progress=None,
) -> RunReport:
    """Classify what the ledger lacks. `progress(outcome, total)` is called after each document."""
    prompt = build_prompt(codebook)
    examples = codebook_examples_text(codebook)
    docs = as_documents(documents.head(limit) if limit else documents)
    keys = document_keys(docs, prompt, backend)
    known = Ledger(warehouse).known(keys)
    todo = [(d, k) for d, k in zip(docs, keys) if k not in known]
    report = RunReport(backend.model, len(docs), cached=len(docs) - len(todo), to_classify=len(todo))
    if estimate:
        todo = todo[:ESTIMATE_SAMPLE]
    if not todo:
        return report

    backend.prepare(codebook, prompt)
    concurrency = max(concurrency, getattr(backend, "slots", 1))  # fill every server slot configured
    try:
        with Ledger(warehouse).writer() as commit, ThreadPoolExecutor(max_workers=concurrency) as pool:
            pending = iter(todo)
            running: dict = {}

            def submit_next() -> bool:
                item = next(pending, None)
                if item is not None:
                    running[pool.submit(classify_document, *item, codebook, prompt, backend, examples)] = item
                return item is not None

            def settle(future) -> None:
                """Commit a finished document the moment it is valid; record why if it is not."""
                document, _ = running.pop(future)
                try:
                    outcome = future.result()
                except DocumentFailed as exc:
                    report.failed.append((document.doc_id, str(exc)))
                    return
                report.model_calls += len(outcome.attempts)
                if outcome.valid:
                    commit(outcome.ledger_record(backend, prompt))
                    report.classified += 1
                    report.seconds.append(sum(a.response.seconds for a in outcome.attempts))
                else:
                    problems = outcome.attempts[outcome.kept].checked.problems
                    report.failed.append((document.doc_id, "; ".join(f"{k}: {', '.join(v)}" for k, v in problems.items())))
                if progress:
                    progress(outcome, len(todo))

            for _ in range(concurrency):
                submit_next()
            try:
                while running:
                    done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for future in done:
                        settle(future)
                    backend.check_resources()  # between documents: stop before memory runs out
                    while len(running) < concurrency and submit_next():
                        pass
            except (KeyboardInterrupt, BackendError) as exc:
                report.stopped = "interrupted (Ctrl+C)" if isinstance(exc, KeyboardInterrupt) else str(exc)
                for future in [f for f in running if f.cancel()]:
                    running.pop(future)
                for future in list(running):  # already at the model: keep what comes back
                    wait([future])
                    try:
                        settle(future)
                    except BackendError:
                        pass
                if isinstance(exc, BackendError) and report.classified == 0 and not report.cached:
                    raise
    finally:
        backend.close()
    return report
