"""Reference adapters for independent_coverage.py (written by the independent helper, 2026-12-04).

They exist only to show the simulator separates wrong from right intervals:
  intervals_naive      -- Wilson interval of mean(Yhat over all N): ignores the gold codes,
                          so must FAIL wherever the model is biased.
  intervals_coders_cp  -- Clopper-Pearson on the gold codes alone, same interval for both
                          targets: exact for the population target, conservative for the
                          corpus target (finite-population correction ignored).
  intervals_wald_diff  -- illustration: difference ("prediction-powered") estimator with a
                          plain Wald interval; expected to break in the rare/small-n cells.
  intervals            -- alias of intervals_coders_cp.
Run e.g.  python independent_coverage.py --adapter reference_adapters.py --function intervals_naive
"""

import math

import numpy as np

Z = 1.959963984540054
ALPHA = 0.05

try:
    from scipy.stats import beta as _beta
except Exception:  # pragma: no cover
    _beta = None


def _wilson(k, m):
    ph = k / m
    den = 1 + Z * Z / m
    centre = (ph + Z * Z / (2 * m)) / den
    half = Z * math.sqrt(ph * (1 - ph) / m + Z * Z / (4 * m * m)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def _clopper_pearson(k, m):
    if _beta is None:
        raise RuntimeError("scipy is required for the Clopper-Pearson reference adapter")
    lo = 0.0 if k == 0 else float(_beta.ppf(ALPHA / 2, k, m - k + 1))
    hi = 1.0 if k == m else float(_beta.ppf(1 - ALPHA / 2, k + 1, m - k))
    return (lo, hi)


def intervals_naive(gold, predicted_coded, predicted_uncoded):
    k = int(np.sum(predicted_coded)) + int(np.sum(predicted_uncoded))
    m = len(predicted_coded) + len(predicted_uncoded)
    iv = _wilson(k, m)
    return {"population": iv, "corpus": iv}


def intervals_coders_cp(gold, predicted_coded, predicted_uncoded):
    iv = _clopper_pearson(int(np.sum(gold)), len(gold))
    return {"population": iv, "corpus": iv}


def intervals_wald_diff(gold, predicted_coded, predicted_uncoded):
    gold = np.asarray(gold, float)
    pc = np.asarray(predicted_coded, float)
    pu = np.asarray(predicted_uncoded, float)
    n, N = len(gold), len(gold) + len(pu)
    yhat_all = np.concatenate([pc, pu])
    d = gold - pc
    est = yhat_all.mean() + d.mean()
    var_pop = d.var(ddof=1) / n + yhat_all.var(ddof=1) / N
    # corpus: only the uncoded part is unknown; rectifier uncertainty shrinks with the FPC
    est_c = (gold.sum() + pu.sum() + (N - n) * d.mean()) / N
    var_c = (N - n) / N * d.var(ddof=1) / n  # = ((N-n)/N)^2 * var(d) * (1/n + 1/(N-n))
    h, hc = Z * math.sqrt(var_pop), Z * math.sqrt(var_c)
    return {"population": (est - h, est + h), "corpus": (est_c - hc, est_c + hc)}


intervals = intervals_coders_cp
