"""The docs' "Measured here" tables, written from a run's metrics.json instead of typed: each table
says the run's date, the commit it ran on and the test split's hash, so a fresh run of the same
command can be compared with it line by line (`adri routing table --doc docs/jev-wire.md`).

A table lives in a doc between two markers, `<!-- measured: routing <dataset> -->` and
`<!-- /measured -->`, each a line of its own (a marker quoted inside a sentence is not one); writing
it replaces only what lies between them."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from pathlib import Path

from adri_pipeline.errors import AdriError
from adri_pipeline.paths import write_text
from adri_pipeline.routing.results import BenchmarkReport, CandidateResult, TaskFigures

END = "<!-- /measured -->"
TASKS = ("D1", "D2", "D3", "D4")


def begin(dataset: str) -> str:
    return f"<!-- measured: routing {dataset} -->"


def provenance() -> dict:
    """What a run records of where it ran: the date (UTC), the checkout's commit (with "+changes" when
    the tree differs from it; "" outside a git checkout) and the cores."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, changed = "", ""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit + ("+changes" if commit and changed else ""),
        "cores": os.cpu_count(),
    }


def _accuracy(figures: TaskFigures | None) -> str:
    if figures is None:
        return "—"
    return f"{figures.accuracy:.3f}{' ⚠' if figures.below_majority else ''}"


def _ms(value: float | None) -> str:
    return "—" if value is None or value != value else f"{value:.1f}"


def _task_header(task: str, first: CandidateResult) -> str:
    return f"{task} accuracy (majority {first.tasks[task].majority_baseline_accuracy:.3f})"


def _row(name: str, result: CandidateResult, h3: str, tasks: list[str]) -> str:
    wire = "yes" if result.kind.get("batching") == "server" else "no"
    latency = result.latency_ms or {}
    per_turn = (result.latency_per_turn_ms_percentiles or {}).get("p95")
    cells = [
        f"`{name}`",
        wire,
        *(_accuracy(result.tasks.get(task)) for task in tasks),
        f"{_ms(latency.get('p50'))} / {_ms(latency.get('p95'))}",
        f"{_ms(per_turn)} ms",
        h3,
    ]
    return "| " + " | ".join(cells) + " |"


def table(report: BenchmarkReport, dataset: str) -> str:
    """The block for `dataset`'s run: markers, provenance line, one row per candidate (in source)."""
    first = next(iter(report.results.values()), None)
    if first is None:
        raise AdriError(f"the {dataset} run has no candidate to tabulate")
    tasks = [task for task in TASKS if task in first.tasks]
    measured = report.measured or {}
    when = measured.get("date") or "a date it did not record"
    commit = f"commit `{measured['commit']}`" if measured.get("commit") else "no commit recorded"
    lines = [
        begin(dataset),
        "",
        f"Written by `adri routing table --dataset {dataset}` from the run of {when}, {commit}, "
        f"{measured.get('cores', '?')} cores; test split sha256 `{report.test_hash[:16]}…`, "
        f"{report.config.get('runs', '?')} independent performance runs. In source (the dataset's own test "
        "split); out of source in the run's report.",
        "",
        "| candidate | wire | "
        + " | ".join(_task_header(task, first) for task in tasks)
        + " | ms per decision p50 / p95 | p95 per turn | H3 |",
        "|" + "---|" * (len(tasks) + 5),
    ]
    for name, result in report.results.items():
        verdict = report.hypotheses[name].H3.verdict if name in report.hypotheses else "—"
        lines.append(_row(name, result, "**met**" if verdict == "met" else verdict, tasks))
    lines += ["", "⚠: below the majority class (the report flags it).", "", END]
    return "\n".join(lines)


def write_into(doc: Path, dataset: str, block: str) -> None:
    """Replace the doc's block for `dataset` with `block`; nothing is written unless both markers are there."""
    try:
        text = doc.read_text(encoding="utf-8")
    except OSError as exc:
        raise AdriError(f"--doc {doc}: {exc.strerror}") from None
    found = re.search(rf"^{re.escape(begin(dataset))}$.*?^{re.escape(END)}$", text, re.M | re.S)
    if found is None:
        raise AdriError(
            f"{doc}: no block `{begin(dataset)}` … `{END}` (each marker a line of its own) to write the table into"
        )
    write_text(doc, text[: found.start()] + block + text[found.end() :])
