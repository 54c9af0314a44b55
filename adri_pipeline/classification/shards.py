"""Shards of documents: the unit a classification run is cut into.

A document's shard is a hash of its id, so it never moves as the corpus grows; inside a shard the
ledger still resumes document by document. Dagster records one partition per shard (a partition per
document made a 100,000-document range run spend over half an hour in Dagster's event bookkeeping:
SCALING.md).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

SHARDS = 256


def shard_of(doc_id: str) -> str:
    """The shard key of a document: one of SHARDS, from a hash of its id."""
    return f"shard-{int.from_bytes(hashlib.blake2b(doc_id.encode(), digest_size=4).digest(), 'big') % SHARDS:03d}"


def shards_of(doc_ids) -> list[str]:
    """The shards holding these documents, in key order."""
    return sorted({shard_of(doc_id) for doc_id in doc_ids})


@dataclass(frozen=True)
class ShardTally:
    """A shard's documents in one run: how many, how many have an answer, how many of those the model
    gave in this run (the rest were cached)."""

    documents: int = 0
    answered: int = 0
    new: int = 0


def tally_shards(doc_ids, answered, answered_now) -> dict[str, ShardTally]:
    """The tally of every shard of `doc_ids`, in key order; `answered` and `answered_now` are among them."""
    documents, done, new = (Counter(shard_of(doc_id) for doc_id in ids) for ids in (doc_ids, answered, answered_now))
    return {shard: ShardTally(documents[shard], done[shard], new[shard]) for shard in sorted(documents)}


def shards_to_record(tallies: dict[str, ShardTally], recorded: set[str]) -> list[str]:
    """The shards whose answers changed since Dagster last heard of them: those that got new answers in
    this run, and those that hold answers but were never recorded (`recorded`: the ones that were)."""
    return [shard for shard, tally in tallies.items() if tally.new or (tally.answered and shard not in recorded)]


def shard_ranges(keys: list[str], per_run: int) -> list[list[str]]:
    """`keys` (in order) cut into consecutive ranges of at most `per_run` shards: one run each."""
    if per_run < 1:
        raise ValueError(f"shards per run must be at least 1 (got {per_run})")
    return [keys[start : start + per_run] for start in range(0, len(keys), per_run)]
