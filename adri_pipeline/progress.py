"""A progress line for long work: what is being done, done/total, rate and time left (tqdm), on
stderr. Shown when stderr is a terminal — commands people watch — and never in Dagster's or CI's logs;
`TQDM_DISABLE=1` turns it off (tqdm reads its own environment)."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from tqdm import tqdm


def steps(items: Iterable, what: str, total: int | None = None, unit: str = "it") -> tqdm:
    """`items` with a progress line titled `what` (a tqdm: also usable as a counter with .update)."""
    return tqdm(items, desc=what, total=total, unit=unit, file=sys.stderr, disable=None, dynamic_ncols=True,
                leave=False)
