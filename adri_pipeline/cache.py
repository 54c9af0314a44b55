"""Content-hash cache: the ledger of valid answers, keyed by everything that can change an answer.

key = sha256(user message, prompt signature, model + digest, prompt version, params). Labels and the
codebook version are not in it, so a label-only edit finds every answer already in the ledger.
Each answer is committed on its own the moment it is valid: `kill -9` loses at most the documents
in flight.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from typing import Callable, Iterator

from adri_pipeline.corpus import Document
from adri_pipeline.prompt import Prompt, build_user_message
from adri_pipeline.warehouse import Warehouse

LEDGER_COLUMNS = (
    "cache_key", "doc_id", "model", "model_digest", "backend", "signature", "prompt_version",
    "params", "response", "audit", "attempts", "valid_first_try", "json_valid_first_try", "seconds",
    "prompt_tokens", "completion_tokens",
)


def cache_key(document: Document, prompt: Prompt, model: str, digest: str, params: dict) -> str:
    payload = json.dumps(
        [build_user_message(document.title_text, document.text), prompt.signature, model, digest,
         prompt.prompt_version, params],
        sort_keys=True, ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def document_keys(documents: list[Document], prompt: Prompt, backend) -> list[str]:
    """The cache key of each document for this prompt and model (a backend, or the identity a run
    recorded: anything with .model, .digest and .params), in document order."""
    return [cache_key(d, prompt, backend.model, backend.digest, backend.params) for d in documents]


class Ledger:
    def __init__(self, warehouse: Warehouse):
        self.warehouse = warehouse

    def known(self, keys: list[str]) -> set[str]:
        return {row[0] for row in self._select("cache_key", keys)}

    def rows(self, keys: list[str]) -> list[tuple]:
        """(cache_key, response, audit, attempts, valid_first_try, json_valid_first_try, seconds,
        prompt_tokens, completion_tokens) for the keys the ledger holds."""
        return self._select("cache_key, response, audit, attempts, valid_first_try, json_valid_first_try, "
                            "seconds, prompt_tokens, completion_tokens", keys)

    def _select(self, columns: str, keys: list[str]) -> list[tuple]:
        if not keys:
            return []
        with self.warehouse.connect() as con:
            con.execute("CREATE OR REPLACE TEMP TABLE _wanted (cache_key VARCHAR)")
            con.executemany("INSERT INTO _wanted VALUES (?)", [(k,) for k in keys])
            return con.execute(f"SELECT {columns} FROM ledger JOIN _wanted USING (cache_key)").fetchall()

    @contextmanager
    def writer(self) -> Iterator[Callable[[dict], None]]:
        """One connection for the run; every commit() is its own transaction."""
        placeholders = ", ".join("?" for _ in LEDGER_COLUMNS)
        sql = f"INSERT OR REPLACE INTO ledger ({', '.join(LEDGER_COLUMNS)}) VALUES ({placeholders})"
        with self.warehouse.connect() as con:
            def commit(record: dict) -> None:
                con.execute(sql, [record[c] for c in LEDGER_COLUMNS])

            yield commit
