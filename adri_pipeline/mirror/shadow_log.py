"""Shadow log: JSON lines written with personal data redacted, ingested into the warehouse with a
clear error per bad line. Bad lines are quarantined; good ones are kept."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adri_pipeline.errors import describe_validation_error
from adri_pipeline.mirror.gate_plumbing import DECISION_OUTCOMES, TASK_OUTCOMES, TASK_RECORD
from adri_pipeline.privacy import Redactor
from adri_pipeline.warehouse import Warehouse, store_shadow_log


class ShadowRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    decision_point: str = Field(min_length=1)
    timestamp: datetime
    state_hash: str = Field(min_length=1)
    state: dict
    rule_decision: str
    mirror_decision: str | None = None
    probability: float | None = Field(default=None, ge=0, le=1)
    latency_ms: float = Field(ge=0)
    mode: Literal["off", "shadow", "control", "veto", "warn", "task"]
    used: Literal["rule", "mirror"]
    outcome: str
    truth: str | None = None  # replays over labelled data carry the ground truth
    run_id: str | None = None  # savings: runs with the controls on and off
    task_id: str | None = None  # task records (decision_point "_task"): latency_ms is the task's time
    main_model_calls: int | None = None
    # state fields the point's configuration shows the mirror unredacted (expose_fields); stored
    # redacted like the rest of the state, so the judges read them redacted
    exposed_fields: list[str] = Field(default_factory=list)


class ShadowLog:
    """Thread-safe appender; redaction happens here, before the bytes reach the disk."""

    def __init__(self, path: str | Path, redactor: Redactor | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.redactor = redactor or Redactor(detect_names=True)
        self._lock = threading.Lock()

    def write(self, record: dict, *, redacted: bool = False) -> None:
        """Appends one record, redacted here unless its writer already did with its own configuration's
        redactor (`redacted=True`: the gate does, with the gate configuration's names and detection, and a
        second pass with this log's default would detect names the configuration turned off)."""
        record = {"timestamp": datetime.now(timezone.utc).isoformat(), **record}
        record = record if redacted else self.redactor.stored(record)
        line = json.dumps(record, ensure_ascii=False)
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")


def _unknown_value(record: ShadowRecord, options: dict[str, list[str]]) -> str | None:
    """Why a record cannot be counted, naming its field: an outcome the gate never writes, or (for a
    configured point) a rule decision, mirror decision or truth that is not one of the point's options
    (the evaluation compares answers by option; an unknown one would be counted as a plain wrong answer)."""
    task = record.decision_point == TASK_RECORD
    known_outcomes = TASK_OUTCOMES if task else DECISION_OUTCOMES
    if record.outcome not in known_outcomes:
        return (
            f"field 'outcome': {record.outcome!r} is not an outcome a {'task' if task else 'decision'} "
            f"record has ({', '.join(sorted(known_outcomes))})"
        )
    known = options.get(record.decision_point)
    if not known:
        return None
    for field in ("rule_decision", "mirror_decision", "truth"):
        value = getattr(record, field)
        if field == "mirror_decision" and record.outcome == "invalid_option":
            continue  # the gate's own record of a mirror that answered none of the options
        if (value is not None or field == "rule_decision") and value not in known:
            return (
                f"field {field!r}: {value!r} is not one of point {record.decision_point!r}'s options "
                f"({', '.join(known)})"
            )
    return None


def read_log(
    path: str | Path, redactor: Redactor | None = None, options: dict[str, list[str]] | None = None
) -> tuple[list[ShadowRecord], list[dict]]:
    """(valid records, quarantined lines with line number and error). Whoever wrote the log, what
    comes out is redacted by `redactor` (the gate configuration's, GateConfig.redactor): each record's
    state, exposed fields included, its text fields and each bad line's text. A line with any value
    the log's fields never take is quarantined, its field named: an unknown outcome, and, with
    `options` (point -> its options, from the gate configuration), a rule decision, mirror decision or
    truth that is none of its point's options."""
    redactor = redactor or Redactor(detect_names=True)
    good, bad = [], []
    with Path(path).open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = ShadowRecord.model_validate(json.loads(line))
                if (problem := _unknown_value(record, options or {})) is not None:
                    bad.append(
                        {"line": number, "error": redactor.text(problem), "raw": redactor.text(line.rstrip("\n"))}
                    )
                    continue
                good.append(ShadowRecord.model_validate(redactor.stored(record.model_dump())))
            except json.JSONDecodeError as exc:
                bad.append({"line": number, "error": f"not JSON: {exc.msg}", "raw": redactor.text(line.rstrip("\n"))})
            except ValidationError as exc:
                bad.append(
                    {
                        "line": number,
                        "error": redactor.text(describe_validation_error(exc.errors()[0])),
                        "raw": redactor.text(line.rstrip("\n")),
                    }
                )
    return good, bad


def ingest(
    path: str | Path,
    warehouse: Warehouse,
    options: dict[str, list[str]] | None = None,
    redactor: Redactor | None = None,
) -> tuple[list[ShadowRecord], list[dict]]:
    """Replace this log's rows in `shadow_log`; bad lines go to `shadow_quarantine` and a
    `<log>.quarantine.jsonl` file beside the log. Returns (records kept, quarantined lines)."""
    path = Path(path)
    good, bad = read_log(path, redactor, options)
    rows = (
        pl.DataFrame(
            [
                {
                    **r.model_dump(mode="json", exclude={"state", "exposed_fields"}),
                    "state": json.dumps(r.state, ensure_ascii=False),
                    "exposed_fields": json.dumps(r.exposed_fields),
                    "source": str(path),
                }
                for r in good
            ]
        )
        if good
        else pl.DataFrame()
    )
    quarantine = pl.DataFrame([{**b, "source": str(path)} for b in bad]) if bad else pl.DataFrame()
    store_shadow_log(warehouse, str(path), rows, quarantine)
    quarantine_file = path.with_suffix(".quarantine.jsonl")
    if bad:
        quarantine_file.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bad), encoding="utf-8")
    else:
        quarantine_file.unlink(missing_ok=True)
    return good, bad
