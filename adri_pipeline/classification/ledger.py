"""Content-hash cache: the ledger of valid answers, keyed by everything that can change an answer.

key = sha256(user message, prompt signature, model + digest, prompt version, params). Labels and the
codebook version are not in it, so a label-only edit finds every answer already in the ledger.
Each answer is committed on its own the moment it is valid: `kill -9` loses at most the documents
in flight.
"""

from __future__ import annotations

import hashlib
import json
import threading
from contextlib import contextmanager, nullcontext

from adri_pipeline.classification.corpus import Document
from adri_pipeline.classification.prompt import Prompt, build_user_message
from adri_pipeline.warehouse import Warehouse, ledger_select, ledger_writer
from adri_pipeline.warehouse.shared import SharedLedger

LEDGER_COLUMNS = (
    "cache_key",
    "doc_id",
    "model",
    "model_digest",
    "backend",
    "signature",
    "prompt_version",
    "params",
    "response",
    "audit",
    "attempts",
    "valid_first_try",
    "json_valid_first_try",
    "seconds",
    "prompt_tokens",
    "completion_tokens",
)


def cache_key(document: Document, prompt: Prompt, model: str, digest: str, params: dict) -> str:
    payload = json.dumps(
        [
            build_user_message(document.title_text, document.text),
            prompt.signature,
            model,
            digest,
            prompt.prompt_version,
            params,
        ],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def document_keys(documents: list[Document], prompt: Prompt, backend) -> list[str]:
    """The cache key of each document for this prompt and model (a backend, or the identity a run
    recorded: anything with .model, .digest and .params), in document order. The same bytes as
    cache_key's, with the part every document shares serialized once (a list's JSON is its items'
    JSON joined by ", ")."""
    shared = json.dumps(
        [prompt.signature, backend.model, backend.digest, prompt.prompt_version, backend.params],
        sort_keys=True,
        ensure_ascii=False,
    )[1:]
    return [
        hashlib.sha256(
            ("[" + json.dumps(build_user_message(d.title_text, d.text), ensure_ascii=False) + ", " + shared).encode(
                "utf-8"
            )
        ).hexdigest()
        for d in documents
    ]


class Ledger:
    """The answers a run commits to: the warehouse's own ledger (one machine), or the shared ledger in
    PostgreSQL (ADRI_LEDGER_URL: many runs at once), which results are pulled from into the warehouse."""

    def __init__(self, store: Warehouse | SharedLedger):
        self.store = store
        self.warehouse = store if isinstance(store, Warehouse) else None

    def known(self, keys: list[str]) -> set[str]:
        if isinstance(self.store, SharedLedger):
            return self.store.known(keys)
        return {row[0] for row in ledger_select(self.store, ["cache_key"], keys)}

    def rows(self, keys: list[str]) -> list[tuple]:
        """(cache_key, response, audit, attempts, valid_first_try, json_valid_first_try, seconds,
        prompt_tokens, completion_tokens) for the keys the ledger holds."""
        return ledger_select(
            self.warehouse,
            [
                "cache_key",
                "response",
                "audit",
                "attempts",
                "valid_first_try",
                "json_valid_first_try",
                "seconds",
                "prompt_tokens",
                "completion_tokens",
            ],
            keys,
        )

    def claims(self):
        """A context giving the run's claims on documents before it asks the model (the shared ledger's
        `Claims`: runs side by side over the same shards), or None: the warehouse's ledger has one
        writing run per file (`Warehouse.running`), so nothing to claim."""
        if isinstance(self.store, SharedLedger):
            return self.store.claims()
        return nullcontext(None)

    def writer(self):
        """One connection for the run; every commit(*records) is one transaction."""
        if isinstance(self.store, SharedLedger):
            return self.store.writer(list(LEDGER_COLUMNS))
        return ledger_writer(self.store, list(LEDGER_COLUMNS))


class HeldLedger(Ledger):
    """The warehouse's ledger with its commits held in memory until `gate` opens: a run may start on
    the first documents of a corpus file while the rest of the file is still being read, and a bad
    line further on must leave everything stored as it was. Once the file is read and stored
    (`gate.wait()` returns) the held answers are committed and every later commit goes straight
    through; if it raised, the next commit raises it and the held answers are dropped. A kill before
    the gate opens loses at most the answers held (asked again next run), never a stored one."""

    def __init__(self, store: Warehouse | SharedLedger, gate: "Latch"):
        super().__init__(store)
        self.gate = gate

    @contextmanager
    def writer(self):
        with super().writer() as commit:
            held: list[dict] = []

            def gated(*records: dict) -> None:
                if not self.gate.is_open():
                    held.extend(records)
                    return
                self.gate.wait()  # raises what reading the file raised
                if held:
                    commit(*held)
                    held.clear()
                commit(*records)

            yield gated
            if held:  # the run ended before the file was read: wait for it, then commit or drop
                self.gate.wait()
                commit(*held)


class Latch:
    """Opens once, with or without an error: what HeldLedger waits on."""

    def __init__(self):
        self._opened = threading.Event()
        self._error: BaseException | None = None

    def open(self, error: BaseException | None = None) -> None:
        self._error = error
        self._opened.set()

    def is_open(self) -> bool:
        return self._opened.is_set()

    def wait(self) -> None:
        self._opened.wait()
        if self._error is not None:
            raise self._error
