"""The project's corrected intervals behind the independent simulator's interface
(`independent_coverage.py --adapter project_adapter.py`): the rows `classification/corrected.py`
computes from (its LABELS_SCHEMA: the model's answer on every document, the gold on the coded ones,
weight 1 for a simple random draw) go through its real `estimate`, and its two corrected intervals
come back. NaN (fewer than 2 coded documents) is a refusal."""

import math
import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adri_pipeline.classification.corrected import estimate  # noqa: E402


def intervals(gold: np.ndarray, predicted_coded: np.ndarray, predicted_uncoded: np.ndarray) -> dict:
    coded, uncoded = len(gold), len(predicted_uncoded)
    rows = pl.DataFrame(
        {
            "model": np.concatenate([predicted_coded, predicted_uncoded]).astype(float),
            "gold": pl.Series(np.concatenate([gold.astype(float), np.full(uncoded, np.nan)])).fill_nan(None),
            "weight": pl.Series(np.concatenate([np.ones(coded), np.full(uncoded, np.nan)])).fill_nan(None),
        }
    )
    found = estimate(rows)
    pair = lambda name: None if math.isnan(found[f"{name}_low"]) else (found[f"{name}_low"], found[f"{name}_high"])  # noqa: E731
    return {"population": pair("corrected"), "corpus": pair("corpus")}
