"""Agreement and Cohen's kappa between each model's results and human coders, per variable.

Coder CSV columns: doc_id, variable, value (list values joined with '|', booleans true/false).
List values are compared as sets (exact-set agreement).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from sklearn.metrics import cohen_kappa_score

from adri_pipeline.codebook import Codebook

REQUIRED_COLUMNS = ("doc_id", "variable", "value")


class CoderFileError(ValueError):
    pass


def _canonical(value: str) -> str:
    parts = sorted(p.strip().lower() for p in str(value).split("|") if p.strip())
    return "|".join(parts)


def load_coder_labels(path: str | Path, codebook: Codebook) -> pl.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise CoderFileError(f"{path}: coder file not found")
    try:
        frame = pl.read_csv(path, infer_schema_length=0)
    except (pl.exceptions.PolarsError, UnicodeDecodeError) as exc:
        raise CoderFileError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise CoderFileError(f"{path}: missing column(s) {missing} (need {', '.join(REQUIRED_COLUMNS)})")
    for line, (doc_id, variable, value) in enumerate(frame.select(REQUIRED_COLUMNS).iter_rows(), start=2):
        if not doc_id:
            raise CoderFileError(f"{path}: line {line}: empty doc_id")
        if variable not in codebook.variables:
            raise CoderFileError(f"{path}: line {line}: unknown variable {variable!r}")
        allowed = codebook.variables[variable].allowed_values()
        unknown = [v for v in str(value or "").split("|") if allowed and v.strip() and v.strip() not in allowed
                   and v.strip().lower() not in allowed]
        if not (value or "").strip() or unknown:
            raise CoderFileError(f"{path}: line {line}: value {value!r} is not one of the codebook's values for "
                                 f"{variable!r} ({', '.join(allowed) if allowed else 'non-empty text'})")
    return frame.select(REQUIRED_COLUMNS).with_columns(
        pl.col("value").map_elements(_canonical, return_dtype=pl.String)
    )


def agreement_table(results: pl.DataFrame, coders: pl.DataFrame) -> pl.DataFrame:
    """One row per (model, variable): n, percent agreement, Cohen's kappa."""
    model_values = results.select("model", "doc_id", "variable", "value").with_columns(
        pl.col("value").map_elements(_canonical, return_dtype=pl.String)
    )
    joined = model_values.join(coders, on=["doc_id", "variable"], suffix="_coder")
    rows = []
    for (model, variable), group in joined.group_by("model", "variable", maintain_order=True):
        predicted, human = group["value"].to_list(), group["value_coder"].to_list()
        same = sum(p == h for p, h in zip(predicted, human))
        kappa = cohen_kappa_score(human, predicted) if len(set(predicted) | set(human)) > 1 else 1.0
        rows.append({"model": model, "variable": variable, "n": len(predicted),
                     "agreement_pct": round(100 * same / len(predicted), 1), "kappa": round(float(kappa), 3)})
    return pl.DataFrame(rows, schema={"model": pl.String, "variable": pl.String, "n": pl.Int64,
                                      "agreement_pct": pl.Float64, "kappa": pl.Float64})
