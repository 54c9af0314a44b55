"""The per-document loop: cache lookup, model call, validation, one retry, commit, progress.

ADR 0011: "Uma nova tentativa por documento quando a resposta foge do codebook ou alguma evidência
sai ausente [...]; fica a melhor das duas. Um documento sem resposta válida não vai para o cache".
So the better attempt is committed whenever it follows the codebook, absent quotes included (they
are an audit status, never a reason to pay again); only a document with no answer that follows the
codebook is listed with its reason and retried by the next run. Ctrl+C, SIGTERM, a memory stop or a
server that went away stop taking new documents; what was committed stays and results are written.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import islice
from typing import Iterator

import polars as pl

from adri_pipeline.classification.audit import DocumentIndex
from adri_pipeline.classification.backends.base import Backend, BackendError, BackendResponse, DocumentFailed, NotSent
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.corpus import Document, as_documents
from adri_pipeline.classification.ledger import Ledger, document_keys
from adri_pipeline.classification.prompt import Prompt, build_prompt, build_retry_message
from adri_pipeline.classification.validation import (
    CheckedResponse,
    check_response,
    codebook_examples_text,
)
from adri_pipeline.stopping import second_signal_abandons
from adri_pipeline.warehouse import Warehouse
from adri_pipeline.warehouse.shared import SharedLedger

log = logging.getLogger(__name__)

ESTIMATE_SAMPLE = 5
PREFETCH = 2  # documents in flight per server slot


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
            "cache_key": self.key,
            "doc_id": self.document.doc_id,
            "model": backend.model,
            "model_digest": backend.digest,
            "backend": backend.name,
            "signature": prompt.signature,
            "prompt_version": prompt.prompt_version,
            "params": json.dumps(backend.params, sort_keys=True),
            "response": json.dumps(kept.checked.content, ensure_ascii=False),
            "audit": json.dumps(
                {k: {**a.as_dict(), "flags": kept.checked.flags.get(k, [])} for k, a in kept.checked.audits.items()},
                ensure_ascii=False,
            ),
            "attempts": len(self.attempts),
            "valid_first_try": self.attempts[0].checked.valid,
            "json_valid_first_try": self.attempts[0].checked.json_valid,
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
    model_calls: int = 0  # answers received
    requests: int = 0  # requests really sent, answered or not (timeouts, drops, 503s included)
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    to_classify: int = 0
    sampled: int = 0  # documents attempted by --estimate
    slots: int = 1  # requests the run keeps at the model at once: what --estimate projects with
    stopped: str = ""  # why the run stopped early, if it did
    answered: list[str] = field(default_factory=list)  # doc ids with an answer in the ledger after the run
    answered_now: list[str] = field(default_factory=list)  # of those, the ones the model answered in this run
    keys: dict[str, str] = field(default_factory=dict)  # doc id -> its cache key in this run

    def count_in(self, head: "RunReport") -> None:
        """What the same run did before on some of these documents (classified then, so cached here)."""
        self.cached -= head.classified
        self.classified += head.classified
        self.model_calls += head.model_calls
        failed_before = {doc_id for doc_id, _ in head.failed}
        self.failed = head.failed + [f for f in self.failed if f[0] not in failed_before]
        self.seconds = head.seconds + self.seconds
        self.to_classify += head.classified
        self.answered_now = head.answered_now + self.answered_now

    @property
    def all_failed(self) -> bool:
        """Something needed the model and nothing came back valid."""
        return bool(self.failed) and self.classified == 0


def classify_document(
    document: Document, key: str, codebook: Codebook, prompt: Prompt, backend: Backend, examples: str
) -> DocumentOutcome:
    index = DocumentIndex(document.abstract, document.title)
    first = backend.classify(prompt, document)
    attempts = [Attempt(first, check_response(first.content, codebook, prompt, index, examples, first.cut))]
    outcome = DocumentOutcome(document, key, attempts, kept=0)
    if attempts[0].checked.needs_retry:
        outcome.retry_message = build_retry_message(attempts[0].checked.retry_reasons())
        previous = first.raw or json.dumps(first.content, ensure_ascii=False)
        second = backend.classify(prompt, document, retry=(previous, outcome.retry_message))
        attempts.append(Attempt(second, check_response(second.content, codebook, prompt, index, examples, second.cut)))
        # min() keeps the first attempt on a tie
        outcome.kept = min(range(2), key=lambda i: attempts[i].checked.badness())
    return outcome


def _is_interruption(exc: BaseException) -> bool:
    """Ctrl+C / SIGTERM (KeyboardInterrupt), a stop reason from the backend, or an orchestrator's
    own interrupt (Dagster raises a BaseException on run termination)."""
    if isinstance(exc, (KeyboardInterrupt, BackendError)):
        return True
    return not isinstance(exc, (Exception, SystemExit, GeneratorExit))


def _stop_reason(exc: BaseException) -> str:
    if isinstance(exc, BackendError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return f"interrupted ({exc.args[0] if exc.args else 'Ctrl+C'})"
    return f"interrupted ({type(exc).__name__})"


SLICE_ROWS = 4096


def _ledger(store) -> Ledger:
    return store if isinstance(store, Ledger) else Ledger(store)


def _documents(frame: pl.DataFrame, rows: list[int], keys: list[str]) -> Iterator[tuple[Document, str]]:
    """(document, cache key) of the given rows, made a slice at a time as the run reaches them: a large
    corpus is never held whole as Python objects (~5 KB a document)."""
    for start in range(0, len(rows), SLICE_ROWS):
        part = rows[start : start + SLICE_ROWS]
        yield from zip(as_documents(frame[part]), (keys[row] for row in part))


class _Unclaimed:
    """The documents a run still has to ask, in order, with nothing to claim: the warehouse's ledger
    has one writing run per file (`Warehouse.running`)."""

    waiting = False  # documents held by other workers: none here
    renew_every_s = None  # the run loop waits on answers with no timeout

    def __init__(self, items: Iterator[tuple[Document, str]]):
        self.items = items

    def take(self, room: int) -> tuple[Document, str] | None:
        """The next document to ask, or None; `room` (how many the run could start now) is what a
        claimed run claims at once."""
        return next(self.items, None)

    def release(self, keys: list[str]) -> None:
        pass

    def renew(self) -> None:
        pass

    def pause(self) -> None:
        pass


class _Claimed(_Unclaimed):
    """Over the shared ledger a document goes to the model only once this worker holds its claim
    (`warehouse.shared.Claims`), claimed when the run has room for it, so it never holds more claims
    than documents in flight (2 per server slot). A document a live worker holds is set aside and
    looked at again (every `poll_s`) once the rest is taken: answered by then, it is read from the
    ledger and counted as cached; its claim released or expired (its worker failed it or died), it is
    claimed and asked here; still held, the run waits for it."""

    def __init__(self, items: Iterator[tuple[Document, str]], claims, report: RunReport):
        super().__init__(items)
        self.claims, self.report = claims, report
        self.renew_every_s = claims.renew_every_s
        self.ready: deque = deque()
        self.held: dict[str, tuple[Document, str]] = {}  # key -> (document, key) another worker holds
        self.looking: deque = deque()  # keys of `held` still to look at in this round
        self.look_again_at = 0.0

    @property
    def waiting(self) -> bool:
        return bool(self.held)

    def take(self, room: int) -> tuple[Document, str] | None:
        while not self.ready:
            batch = list(islice(self.items, max(room, 1))) or self._held_to_look_at(max(room, 1))
            if not batch:
                return None
            self._claim(batch)
        return self.ready.popleft()

    def _held_to_look_at(self, room: int) -> list[tuple[Document, str]]:
        """Up to `room` of the documents other workers held, every one of them looked at once per `poll_s`."""
        if not self.looking and self.held and time.monotonic() >= self.look_again_at:
            self.looking = deque(self.held)
            self.look_again_at = time.monotonic() + self.claims.poll_s
        batch = []
        while self.looking and len(batch) < room:
            key = self.looking.popleft()
            if key in self.held:
                batch.append(self.held.pop(key))
        return batch

    def _claim(self, batch: list[tuple[Document, str]]) -> None:
        claimed, answered = self.claims.take([(key, document.doc_id) for document, key in batch])
        for document, key in batch:
            if key in claimed:
                self.ready.append((document, key))
            elif key in answered:  # another worker's answer: read from the ledger, never asked here
                self.report.cached += 1
                self.report.to_classify -= 1
                self.report.answered.append(document.doc_id)
            else:
                self.held[key] = (document, key)

    def release(self, keys: list[str]) -> None:
        self.claims.release(keys)

    def renew(self) -> None:
        self.claims.renew()

    def pause(self) -> None:
        time.sleep(max(0.0, self.look_again_at - time.monotonic()))


class _InFlight:
    """The documents at the model at once: `size` prepared (one more than the server's slots, so a
    slot never idles while the last answer is validated, audited and committed), their answers
    group-committed as they finish, a stop settled on the way out."""

    def __init__(
        self,
        report: RunReport,
        pending,
        size: int,
        codebook: Codebook,
        prompt,
        backend: Backend,
        commit,
        progress,
        hand_over,
        total: int,
    ):
        self.report, self.pending, self.size, self.total = report, pending, size, total
        self.codebook, self.prompt, self.backend, self.commit = codebook, prompt, backend, commit
        self.progress, self.hand_over = progress, hand_over
        self.examples = codebook_examples_text(codebook)
        self.pool = ThreadPoolExecutor(max_workers=size)
        self.running: dict = {}
        self.abandoned = False

    def submit_next(self) -> bool:
        item = self.pending.take(self.size - len(self.running))
        if item is not None:
            self.running[
                self.pool.submit(classify_document, *item, self.codebook, self.prompt, self.backend, self.examples)
            ] = item
        return item is not None

    def taking(self) -> bool:
        """Whether to start another document: not once `hand_over()` says the rest is another run's."""
        return self.hand_over is None or not self.hand_over()

    def settle(self, futures) -> None:
        """Commit the finished documents whose answers follow the codebook in one statement, then
        record why the others failed. A group commit: a statement costs milliseconds whatever its
        rows, so when answers arrive faster than one commit, those that finished meanwhile go
        together in the next; one at a time, it is one row per commit. A future leaves `running`
        only once committed: a stop landing before that commits it on the way out."""
        outcomes = []
        for future in futures:
            try:
                outcomes.append((future, future.result()))
            except DocumentFailed as exc:
                outcomes.append((future, exc))
        self.commit(
            *(
                o.ledger_record(self.backend, self.prompt)
                for _, o in outcomes
                if not isinstance(o, Exception) and o.valid
            )
        )
        unanswered = []
        for future, outcome in outcomes:
            document, key = self.running.pop(future)
            if isinstance(outcome, Exception) or not outcome.valid:
                unanswered.append(key)
            if not isinstance(outcome, NotSent):  # never asked: the next run does it
                self._count(document, outcome)
        self.pending.release(unanswered)  # another worker may try them, as a next run would

    def _count(self, document, outcome) -> None:
        report = self.report
        if isinstance(outcome, DocumentFailed):
            report.failed.append((document.doc_id, str(outcome)))
            return
        report.model_calls += len(outcome.attempts)
        if outcome.valid:
            report.classified += 1
            report.answered.append(document.doc_id)
            report.answered_now.append(document.doc_id)
            report.seconds.append(sum(a.response.seconds for a in outcome.attempts))
        else:
            problems = outcome.attempts[outcome.kept].checked.problems
            report.failed.append((document.doc_id, "; ".join(f"{k}: {', '.join(v)}" for k, v in problems.items())))
        if self.progress:
            self.progress(outcome, self.total)

    def fill(self) -> None:
        while len(self.running) < self.size and self.taking() and self.submit_next():
            pass

    def run(self) -> None:
        """Until nothing is at the model and nothing is left to take. Over the shared ledger the loop
        also wakes to renew this worker's claims, and waits for documents other workers hold."""
        self.fill()
        try:
            while self.running or (self.pending.waiting and self.taking()):
                if self.running:
                    done, _ = wait(list(self.running), timeout=self.pending.renew_every_s, return_when=FIRST_COMPLETED)
                    if done:
                        self.settle(done)
                else:
                    self.pending.pause()
                self.pending.renew()
                self.backend.check_resources()  # between documents: stop before memory runs out
                self.fill()
        except BaseException as exc:
            if not _is_interruption(exc):
                raise
            self._stop(exc)

    def _stop(self, exc: BaseException) -> None:
        """Requests waiting for a slot are not sent; those already at the model are waited for and
        kept, unless a second Ctrl+C abandons them (redone next run)."""
        report = self.report
        report.stopped = _stop_reason(exc)
        getattr(self.backend, "stop", lambda: None)()
        for future in [f for f in self.running if f.cancel()]:
            self.running.pop(future)
        try:
            with second_signal_abandons():
                for future in list(self.running):
                    wait([future])
                    try:
                        self.settle([future])
                    except BackendError:
                        pass
        except KeyboardInterrupt:
            self.abandoned = True
            lost = [document.doc_id for document, _ in self.running.values()]
            report.stopped += (
                f"; second interrupt: {len(lost)} request(s) in flight abandoned ({', '.join(lost)}), redone next run"
            )
        if isinstance(exc, BackendError) and report.classified == 0 and not report.cached:
            raise exc


def classify_corpus(
    documents: pl.DataFrame,
    codebook: Codebook,
    backend: Backend,
    store: Warehouse | SharedLedger | Ledger,
    *,
    limit: int | None = None,
    estimate: bool = False,
    concurrency: int = 1,
    progress=None,
    keep_backend: bool = False,
    hand_over=None,
    on_start=None,
    prompt=None,
) -> RunReport:
    """Classify what the ledger of `store` (the warehouse, or the shared ledger) lacks. `progress(outcome,
    total)` is called after each document, in this thread, so it may write to the warehouse (partial
    results). `prompt`: the run's, when its caller built it (built from the codebook otherwise)."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (got {limit})")
    prompt = prompt or build_prompt(codebook)
    frame = documents.head(limit) if limit else documents
    keys = [key for part in frame.iter_slices(SLICE_ROWS) for key in document_keys(as_documents(part), prompt, backend)]
    report, todo = _what_the_ledger_holds(frame, keys, backend, store)
    if estimate:
        todo = todo[:ESTIMATE_SAMPLE]
        report.sampled = len(todo)
    if on_start is not None:  # what the ledger already holds, before any model call
        on_start(report)
    if not todo:
        return report
    _ask_the_model(
        report,
        frame,
        todo,
        keys,
        codebook,
        prompt,
        backend,
        store,
        concurrency=concurrency,
        progress=progress,
        hand_over=hand_over,
        keep_backend=keep_backend,
    )
    return report


def _what_the_ledger_holds(
    frame: pl.DataFrame, keys: list[str], backend: Backend, store: Warehouse | SharedLedger | Ledger
) -> tuple[RunReport, list[int]]:
    """The run's report as the ledger starts it (each document answered already counted as cached) and
    the rows left for the model."""
    doc_ids = frame["doc_id"].to_list()
    known = _ledger(store).known(keys)
    todo = [row for row, key in enumerate(keys) if key not in known]
    report = RunReport(
        backend.model,
        len(doc_ids),
        cached=len(doc_ids) - len(todo),
        to_classify=len(todo),
        answered=[d for d, k in zip(doc_ids, keys) if k in known],
        keys=dict(zip(doc_ids, keys)),
    )
    return report, todo


def _ask_the_model(
    report: RunReport,
    frame: pl.DataFrame,
    todo: list[int],
    keys: list[str],
    codebook: Codebook,
    prompt: Prompt,
    backend: Backend,
    store: Warehouse | SharedLedger | Ledger,
    *,
    concurrency: int,
    progress,
    hand_over,
    keep_backend: bool,
) -> None:
    """The documents at rows `todo` through the backend, every server slot kept busy, each answer
    committed to the ledger as it comes; the pool and (unless kept) the backend are closed however the
    run ends, an interrupt included, and after an interrupt the ledger says what was answered."""
    backend.prepare(codebook, prompt)
    report.slots = max(concurrency, getattr(backend, "slots", 1))  # fill every server slot configured
    flight, size = None, report.slots * PREFETCH
    try:  # the claims outlive the writer: answers it holds back (HeldLedger) are committed before they go
        with _ledger(store).claims() as claims, _ledger(store).writer() as commit:
            pending = _documents(frame, todo, keys)
            pending = _Unclaimed(pending) if claims is None else _Claimed(pending, claims, report)
            flight = _InFlight(report, pending, size, codebook, prompt, backend, commit, progress, hand_over, len(todo))
            flight.run()
    finally:
        if flight is not None:
            flight.pool.shutdown(wait=not flight.abandoned, cancel_futures=True)
        if not keep_backend:  # the caller goes on with it (the rest of a file read while this ran)
            backend.close()
        report.requests = getattr(backend, "requests_sent", report.model_calls)
    if report.stopped:  # an interrupt may land between a commit and its bookkeeping: the ledger decides
        known = _ledger(store).known(keys)
        report.answered = [d for d, k in zip(frame["doc_id"].to_list(), keys) if k in known]
