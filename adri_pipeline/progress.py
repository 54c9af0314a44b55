"""A progress line for long work: what is being done, done/total, rate and time left (tqdm), on
stderr. In a terminal, one line redrawn in place; in a log file (stderr not a terminal: Dagster's
logs, CI, `adri classify ... 2> run.log`), a plain line every LOG_EVERY_S seconds and one at the end,
never a carriage return. `TQDM_DISABLE=1` turns both off (tqdm reads its own environment)."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from tqdm import tqdm

LOG_EVERY_S = 30.0


LOG_LINE = "{desc}: {n_fmt}/{total_fmt} {unit} [{elapsed} elapsed, {remaining} left, {rate_fmt}]"


class _LogLines(tqdm):
    """tqdm drawn as whole lines: each refresh (at most every LOG_EVERY_S) and the close write one."""

    def display(self, msg=None, pos=None) -> bool:
        if not self.disable and self.n and self.n != getattr(self, "_last_logged", None):  # not "0 done"
            self._last_logged = self.n
            self.fp.write(self.format_meter(**self.format_dict).strip() + "\n")
            self.fp.flush()
        return True

    def clear(self, nolock=False) -> None:
        pass  # nothing drawn in place, nothing to erase

    def close(self) -> None:
        if not self.disable:
            self.display()  # the last count, once; then nothing tqdm would erase or end the line with
            self._decr_instances(self)
            self.disable = True
        super().close()


def steps(items: Iterable | None, what: str, total: int | None = None, unit: str = "it") -> tqdm:
    """`items` with a progress line titled `what` (a tqdm: also usable as a counter with .update)."""
    if sys.stderr.isatty():
        return tqdm(items, desc=what, total=total, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)
    return _LogLines(
        items,
        desc=what,
        total=total,
        unit=unit,
        file=sys.stderr,
        mininterval=LOG_EVERY_S,
        maxinterval=LOG_EVERY_S,
        bar_format=LOG_LINE,
    )


class DocumentsDone:
    """A classification's progress callback (`progress(outcome, total)`) drawn as one progress line,
    created at the first document, so that an error before any work prints alone; the total follows
    the run's (a file's first documents are classified while the rest is read). `close()` when done."""

    def __init__(self, what: str = "classifying"):
        self.what, self.bar = what, None

    def __call__(self, outcome, total: int) -> None:
        if self.bar is None:
            self.bar = steps(None, self.what, total=total, unit="doc")
        self.bar.total = total
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def note(what: str) -> None:
    """One line on stderr for a step that has no count to show (a model fitting): said before it
    starts, so a minute of silence reads as work, and its end said with its duration."""
    sys.stderr.write(what + "\n")
    sys.stderr.flush()
