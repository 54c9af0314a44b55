"""The Dagster instance the command line works beside: $DAGSTER_HOME when set, else `.dagster_home` in
the current folder (where `adri demo` and `adri ui` keep theirs). The command line reports what it
classified there, so Dagster's asset history shows every run; without an instance it does nothing, and
it never imports Dagster unless one is there (a served model's `adri classify` starts without it)."""

from __future__ import annotations

import logging
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

LOCAL_HOME = ".dagster_home"  # the instance folder `adri demo` and `adri ui` use when DAGSTER_HOME is unset


def configured_home() -> Path | None:
    """$DAGSTER_HOME when set, else `.dagster_home` in the current folder when it exists; None: no
    instance to report to."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        return Path(home)
    local = Path.cwd() / LOCAL_HOME
    return local if local.is_dir() else None


@contextmanager
def _quiet():
    """Dagster's own warnings off while it is asked (its beta notices on import, five retry warnings
    when an instance's database is down): the one line the caller writes says what happened."""
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(before)


def report_cli_classification(settings, run) -> str | None:
    """`run` (service.ClassificationRun, committed) as runless materializations in the configured
    instance: a line saying what was recorded, or None when no instance is configured. An instance that
    is missing or unreachable costs a warning line, never the command: the classification is done."""
    home = configured_home()
    if home is None:
        return None
    if not home.is_dir():
        log.warning("DAGSTER_HOME %s is not a folder: this run is not recorded in Dagster", home)
        return None
    try:
        with _quiet():
            from adri_pipeline.defs.classification.cli_runs import record_cli_run

            shards, snapshot = record_cli_run(home, settings, run)
    except Exception as exc:  # noqa: BLE001 - any failure of the instance: the run stays done, said once
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        log.warning("Dagster instance %s: this run is not recorded there (%s)", home, reason)
        return None
    return f"dagster: run {run.run_id[:8]} recorded in {home}: {len(shards)} shard(s) of classifications" + (
        ", analyst_snapshot" if snapshot else ""
    )
