"""Savings as the mirror design measured them: "Nos dias 5 e 6 de outubro repetimos 11 tarefas reais
três vezes, com os controlos ligados e desligados. Com os controlos, demoraram 863 segundos no total;
sem eles, 1.124 (23 % menos). A qualidade, avaliada às cegas, foi igual. Em tarefas muito simples, os
controlos acrescentaram entre 2 e 13 segundos."

So: the same tasks run with the controls on and off, k repetitions each (`Gate.task_finished` logs one
record per task and run); totals; per task the paired difference of the mean times, with a bootstrap
interval over tasks, so the tasks the controls slowed down stay visible; main-model calls; per
decision point the tool calls the mirror avoided and those it added, counted apart; and quality
graded on a blinded sheet (`blind_sheet`) that does not say which run an output came from.
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections import defaultdict
from pathlib import Path
from statistics import mean

import numpy as np

from adri_pipeline.errors import AdriError
from adri_pipeline.jev import metrics
from adri_pipeline.mirror.gate_config import DecisionPoint
from adri_pipeline.mirror.gate_plumbing import TASK_RECORD
from adri_pipeline.paths import replacing, write_text

REPETITIONS = 3  # the mirror design: "repetimos 11 tarefas reais três vezes"
SIDES = {"controls_on": "on", "controls_off": "off"}


class SavingsError(AdriError, ValueError):
    """The message names the file and, for a graded sheet, the line."""


def _tasks(records: list[dict]) -> list[dict]:
    tasks = [r for r in records if r["decision_point"] == TASK_RECORD]
    if not tasks:
        raise SavingsError("no task records in the log (the agent calls Gate.task_finished per task)")
    return tasks


def _paired(values: dict[str, dict[str, list[float]]], seed: int) -> dict:
    """Per task the mean with the controls on minus the mean with them off; the mean of those
    differences with a 95 % bootstrap interval over tasks (below two paired tasks, why there is none)."""
    both = sorted(t for t, sides in values.items() if sides["on"] and sides["off"])
    differences = np.array([mean(values[t]["on"]) - mean(values[t]["off"]) for t in both])
    interval = metrics.bootstrap_interval(
        lambda pick: float(differences[pick].mean()), len(both), np.random.default_rng(seed)
    )
    return {
        "tasks": len(both),
        "mean_difference": round(float(differences.mean()), 3) if len(both) else None,
        "ci95": interval.model_dump()
        if isinstance(interval, metrics.NotEnoughData)
        else [round(end, 3) for end in interval],
        "per_task": {
            t: {
                "on": round(mean(values[t]["on"]), 3),
                "off": round(mean(values[t]["off"]), 3),
                "difference": round(float(d), 3),
            }
            for t, d in zip(both, differences)
        },
    }


def _tool_calls(records: list[dict], points: dict[str, DecisionPoint], on_runs: set) -> dict:
    """Per point, in the runs with the controls on: when the mirror's answer was used and differed
    from the rule's, did it spare a tool call (the rule's answer calls one, the mirror's does not) or
    add one? Points without `tool_call_options` report changed answers only."""
    out: dict[str, dict] = {}
    for record in records:
        if record["decision_point"] == TASK_RECORD or record.get("run_id") not in on_runs:
            continue
        name = record["decision_point"]
        tools = set(points[name].tool_call_options) if name in points else set()
        counts = out.setdefault(
            name,
            {
                "decisions": 0,
                "taken_by_mirror": 0,
                "answers_changed": 0,
                "tool_calls_avoided": 0 if tools else None,
                "tool_calls_added": 0 if tools else None,
            },
        )
        counts["decisions"] += 1
        if record["used"] != "mirror":
            continue
        counts["taken_by_mirror"] += 1
        rule, mirror = record["rule_decision"], record["mirror_decision"]
        if mirror != rule:
            counts["answers_changed"] += 1
            if tools:
                counts["tool_calls_avoided"] += rule in tools and mirror not in tools
                counts["tool_calls_added"] += mirror in tools and rule not in tools
    return out


def savings(
    records: list[dict],
    points: dict[str, DecisionPoint] | None = None,
    quality: dict[tuple[str, str], float] | None = None,
    seed: int = 3,
) -> dict:
    """The comparison above from a log's records (JSON-ready dicts); `quality` maps (run_id, task_id)
    to a grade read back from a blinded sheet (`read_quality`)."""
    tasks = _tasks(records)
    seconds, calls, grades = _per_task(tasks, quality)
    sides = _sides(tasks, seconds)
    time_paired = _paired(seconds, seed)
    unpaired = sorted(t for t, v in seconds.items() if not (v["on"] and v["off"]))
    on_sum = sum(v["on"] for v in time_paired["per_task"].values())
    off_sum = sum(v["off"] for v in time_paired["per_task"].values())
    warnings = _warnings(seconds, unpaired, quality)
    on_runs = {t.get("run_id") for t in tasks if t["outcome"] == "controls_on"}
    result = {
        **sides,
        "paired_seconds": time_paired,
        "time_saved_pct": round(100 * (1 - on_sum / off_sum), 1) if off_sum else None,
        "slower_with_controls": sorted(t for t, v in time_paired["per_task"].items() if v["difference"] > 0),
        "paired_main_model_calls": {k: v for k, v in _paired(calls, seed).items() if k != "per_task"},
        "points": _tool_calls(records, points or {}, on_runs),
        "unpaired_tasks": unpaired,
        "warnings": warnings,
    }
    if quality is not None:
        graded = _paired(grades, seed)
        result["quality"] = {
            "mean_on": _mean_of(grades, "on"),
            "mean_off": _mean_of(grades, "off"),
            "paired": {k: v for k, v in graded.items() if k != "per_task"},
        }
    return result


def _per_task(tasks: list[dict], quality: dict[tuple[str, str], float] | None):
    """Each task's seconds, main-model calls and grades (where graded), with the controls on and off:
    the pairs every comparison is made on, so a task's runs are only ever compared with each other."""
    seconds: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"on": [], "off": []})
    calls: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"on": [], "off": []})
    grades: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"on": [], "off": []})
    for task in tasks:
        side = SIDES[task["outcome"]]
        seconds[task["task_id"]][side].append(task["latency_ms"] / 1000)
        calls[task["task_id"]][side].append(task.get("main_model_calls") or 0)
        if quality and (task.get("run_id") or "", task["task_id"]) in quality:
            grades[task["task_id"]][side].append(quality[(task.get("run_id") or "", task["task_id"])])
    return seconds, calls, grades


def _sides(tasks: list[dict], seconds: dict[str, dict[str, list[float]]]) -> dict:
    """Per side (controls on, off): how many tasks, runs and repetitions, their total time and main-model
    calls, the totals a reader checks the paired figures against."""
    sides = {}
    for outcome, side in SIDES.items():
        mine = [t for t in tasks if t["outcome"] == outcome]
        repetitions = [len(v[side]) for v in seconds.values() if v[side]]
        sides[outcome] = {
            "tasks": len({t["task_id"] for t in mine}),
            "runs": len({t.get("run_id") for t in mine}),
            "repetitions_per_task": [min(repetitions), max(repetitions)] if repetitions else None,
            "seconds_total": round(sum(t["latency_ms"] for t in mine) / 1000, 3),
            "main_model_calls": sum(t.get("main_model_calls") or 0 for t in mine),
        }
    return sides


def _warnings(
    seconds: dict[str, dict[str, list[float]]], unpaired: list[str], quality: dict[tuple[str, str], float] | None
) -> list[str]:
    """What weakens the comparison: tasks run one way only, fewer repetitions than the mirror design's,
    quality not graded."""
    warnings = []
    if unpaired:
        warnings.append(
            f"{len(unpaired)} task(s) ran one way only and are left out of the paired figures: {unpaired[:5]}"
        )
    fewest = min((len(v[s]) for v in seconds.values() for s in ("on", "off") if v[s]), default=0)
    if fewest < REPETITIONS:
        warnings.append(f"some task ran {fewest} time(s) on a side; the mirror design repeats each {REPETITIONS} times")
    if quality is None:
        warnings.append("quality not graded: write a blinded sheet (--blind-sheet), grade it, pass it back (--quality)")
    return warnings


def _mean_of(values: dict[str, dict[str, list[float]]], side: str) -> float | None:
    flat = [v for sides in values.values() for v in sides[side]]
    return round(mean(flat), 3) if flat else None


def blind_sheet(records: list[dict], path: Path, seed: int = 3) -> Path:
    """A CSV with one row per task run (sheet_id, task_id, output, quality to fill), shuffled, with
    nothing that says whether the controls were on; the key to unblind it goes to `<path>.key.json`,
    which the grader must not open. Returns the key's path."""
    tasks = _tasks(records)
    rows = [(t.get("run_id") or "", t["task_id"], t.get("state", {}).get("output", ""), t["outcome"]) for t in tasks]
    random.Random(seed).shuffle(rows)
    key = {}
    with replacing(path) as written, written.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sheet_id", "task_id", "output", "quality"])
        for number, (run_id, task_id, output, outcome) in enumerate(rows, start=1):
            sheet_id = f"S{number:04d}"
            writer.writerow([sheet_id, task_id, output, ""])
            key[sheet_id] = {"run_id": run_id, "task_id": task_id, "outcome": outcome}
    return write_text(key_of(path), json.dumps(key, ensure_ascii=False, indent=1))


def key_of(sheet: Path) -> Path:
    """Where a blinded sheet's key is: beside it, `<sheet>.key.json`."""
    return Path(sheet).with_name(Path(sheet).name + ".key.json")


def read_quality(path: Path) -> dict[tuple[str, str], float]:
    """A graded sheet back: (run_id, task_id) -> grade, through the key written beside it. Blank
    grades are skipped; anything else that is not a finite number is refused naming the file and line."""
    path = Path(path)
    key_path = key_of(path)
    if not key_path.is_file():
        raise SavingsError(f"{path}: its key {key_path.name} is not beside it (written with the blinded sheet)")
    key = json.loads(key_path.read_text(encoding="utf-8"))
    out = {}
    with path.open(newline="", encoding="utf-8") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            grade = (row.get("quality") or "").strip()
            if not grade:
                continue
            if row.get("sheet_id") not in key:
                raise SavingsError(f"{path}:{line}: sheet_id {row.get('sheet_id')!r} is not in {key_path.name}")
            try:
                value = float(grade.replace(",", "."))
            except ValueError:
                raise SavingsError(f"{path}:{line}: quality {grade!r} is not a number") from None
            if not math.isfinite(value):  # float() reads "inf" and "nan"; no grade is either
                raise SavingsError(f"{path}:{line}: quality {grade!r} is not a finite number")
            entry = key[row["sheet_id"]]
            out[(entry["run_id"], entry["task_id"])] = value
    return out
