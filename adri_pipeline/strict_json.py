"""JSON every strict parser reads: the one encoder for what the project writes as JSON (reports,
`--json` output, stored evaluations). Python's `json` writes `NaN` and `Infinity` by default, which
`jq`, browsers and `json.loads(..., parse_constant=...)` refuse; here an undefined number is `null`
and a value left undefined for a reason says so beside it (jev/metrics.NotEnoughData). `Figure` is
the type of a result figure that may be undefined: `null` read back is nan again, so a report
written strictly validates as it did before it was written."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, BeforeValidator


def _none_as_nan(value):
    return float("nan") if value is None else value


Figure = Annotated[float, BeforeValidator(_none_as_nan)]  # a figure that may be undefined (null in JSON)


def plain(value: Any) -> Any:
    """`value` with every non-finite float as None, models as their dicts, numpy values as Python's."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="python")
    if isinstance(value, (np.generic, np.ndarray)):
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def dumps(value: Any, **options) -> str:
    """`json.dumps` of `plain(value)`, refusing (ValueError) anything that would not be strict JSON."""
    options.setdefault("ensure_ascii", False)
    return json.dumps(plain(value), allow_nan=False, **options)


def write(path: Path, value: Any, indent: int | None = 1) -> None:
    Path(path).write_text(dumps(value, indent=indent), encoding="utf-8")


def _refuse(constant: str):
    raise ValueError(f"{constant} is not JSON")


def loads(text: str) -> Any:
    """`json.loads` that refuses NaN and Infinity, as strict parsers do (the tests read with it)."""
    return json.loads(text, parse_constant=_refuse)
