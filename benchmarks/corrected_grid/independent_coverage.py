#!/usr/bin/env python
"""Independent coverage check of "corrected" prevalence intervals.

Written by an independent helper who never saw the project's code (2026-12-04).
Standalone: numpy + argparse only (the adapter it loads may use anything).

The adapter is a Python file exposing

    intervals(gold, predicted_coded, predicted_uncoded)
        -> {"population": (low, high) or None, "corpus": (low, high) or None}

Usage:
    python independent_coverage.py --adapter PATH [--function NAME]
        [--grid grid.json] [--cells 0,3,7] [--draws K] [--json OUT]

The data-generating process, targets and pass rule are those recorded in
grid.json (see its fields); this file implements them.
"""

import argparse
import importlib.util
import json
import math
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-12
TARGETS = ("population", "corpus")


def load_function(path, name):
    spec = importlib.util.spec_from_file_location("adapter_under_test", os.path.abspath(path))
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(mod)
    fn = getattr(mod, name, None)
    if fn is None:
        raise SystemExit(f"adapter {path} has no function {name!r}")
    return fn


def draw(rng, p, sens, fa, n, N):
    """One draw of the data-generating process in grid.json."""
    y = rng.random(N) < p
    u = rng.random(N)
    yhat = np.where(y, u < sens, u < fa)
    coded = rng.choice(N, size=n, replace=False)
    mask = np.zeros(N, dtype=bool)
    mask[coded] = True
    gold = y[coded].astype(np.int64)
    pred_coded = yhat[coded].astype(np.int64)
    pred_uncoded = yhat[~mask].astype(np.int64)
    corpus_share = float(y.mean())
    return gold, pred_coded, pred_uncoded, corpus_share


def parse_interval(iv):
    """Return (kind, low, high) with kind in {'refused', 'ok', 'malformed'}."""
    if iv is None:
        return "refused", None, None
    try:
        lo, hi = iv
        lo = float(lo)
        hi = float(hi)
    except Exception:
        return "malformed", None, None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        return "malformed", lo, hi
    return "ok", lo, hi


def ask(fn, gold, pc, pu):
    """The adapter's interval for each target; raises when the answer is not a dict holding both, which
    the caller counts as an adapter error (a miss for both targets), as it does anything the adapter raises."""
    out = fn(gold, pc, pu)
    if not isinstance(out, dict):
        raise TypeError(f"intervals() returned {type(out).__name__}, not dict")
    return {t: out[t] for t in TARGETS}


def tally(s, answer, truth, uncoded_left):
    """Count one target's answer in its tallies `s`: a refusal is not given; a malformed or zero-width
    interval (while uncoded documents remain) is given and missed; a given interval covers the truth or not."""
    kind, lo, hi = parse_interval(answer)
    if kind == "refused":
        s["refused"] += 1
        return
    s["given"] += 1
    if kind == "malformed":
        s["malformed"] += 1
        return
    width = hi - lo
    s["width_sum"] += width
    s["width_n"] += 1
    if width <= TOL and uncoded_left:
        s["zero_width"] += 1
        return  # zero width while uncoded documents remain: a miss
    if lo - TOL <= truth <= hi + TOL:
        s["covered"] += 1


def run_cell(fn, cell, draws, threshold):
    rng = np.random.default_rng(cell["seed"])
    p, n, N = cell["p"], cell["n"], cell["N"]
    sens, fa = cell["sensitivity"], cell["false_alarm"]
    st = {t: dict(given=0, covered=0, refused=0, width_sum=0.0, width_n=0, zero_width=0, malformed=0) for t in TARGETS}
    errors = 0
    first_error = None
    t0 = time.time()
    for _ in range(draws):
        gold, pc, pu, corpus_share = draw(rng, p, sens, fa, n, N)
        truth = {"population": p, "corpus": corpus_share}
        try:
            answers = ask(fn, gold, pc, pu)
        except Exception as exc:  # an adapter that raises: a miss for both targets
            errors += 1
            if first_error is None:
                first_error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                print(f"  ! cell {cell['id']}: adapter raised: {first_error}", flush=True)
            for t in TARGETS:
                st[t]["given"] += 1
            continue
        for t in TARGETS:
            tally(st[t], answers[t], truth[t], pu.size > 0)
    res = dict(cell)
    res["draws"] = draws
    res["errors"] = errors
    res["first_error"] = first_error
    res["seconds"] = round(time.time() - t0, 2)
    return verdict(res, st, threshold)


def verdict(res, st, threshold):
    """The cell's row `res` completed with each target's figures, its status and the notes that explain
    it: any adapter error or malformed interval fails, as does a coverage below the threshold."""
    draws, errors = res["draws"], res["errors"]
    status = "PASS"
    notes = []
    if errors:
        status = "FAIL"
        notes.append(f"{errors} adapter errors")
    for t in TARGETS:
        s = st[t]
        cov = s["covered"] / s["given"] if s["given"] else None
        res[f"coverage_{t}"] = cov
        res[f"refusal_{t}"] = s["refused"] / draws
        res[f"given_{t}"] = s["given"]
        res[f"mean_width_{t}"] = (s["width_sum"] / s["width_n"]) if s["width_n"] else None
        res[f"zero_width_{t}"] = s["zero_width"]
        res[f"malformed_{t}"] = s["malformed"]
        if s["malformed"]:
            status = "FAIL"
            notes.append(f"{t}: {s['malformed']} malformed")
        if cov is None:
            if status == "PASS":
                status = "ALL-REFUSED"
            notes.append(f"{t}: refused in every draw")
        elif cov < threshold:
            status = "FAIL"
            notes.append(f"{t} coverage {cov:.3f} < {threshold}")
    res["status"] = status
    res["notes"] = "; ".join(notes)
    return res


def fmt(x, spec=".3f"):
    return "  n/a" if x is None else format(x, spec)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--adapter", required=True, help="Python file exposing intervals(gold, predicted_coded, predicted_uncoded)"
    )
    ap.add_argument("--function", default="intervals", help="name of the function in the adapter (default: intervals)")
    ap.add_argument("--grid", default=os.path.join(HERE, "grid.json"))
    ap.add_argument("--cells", default=None, help="comma-separated cell ids (default: all)")
    ap.add_argument(
        "--draws", type=int, default=None, help="override draws per cell (quick look; not the grid's verdict)"
    )
    ap.add_argument("--json", default=None, help="write the per-cell table to this file")
    return ap.parse_args(argv)


def chosen_cells(grid, wanted):
    """The grid's cells, or those named in --cells, in the order named there."""
    cells = grid["cells"]
    if wanted:
        ids = [int(c) for c in wanted.split(",") if c.strip()]
        by_id = {c["id"]: c for c in cells}
        cells = [by_id[i] for i in ids]
    return cells


def row(r):
    """One cell's line of the table, under the header main prints."""
    return (
        f"{r['id']:>3} {r['p']:>5.2f} {r['n']:>4} {r['N']:>6} {r['sensitivity']:>4.2f} {r['false_alarm']:>4.2f} | "
        f"{fmt(r['coverage_population']):>7} {fmt(r['coverage_corpus']):>7} | "
        f"{r['refusal_population']:>7.3f} {r['refusal_corpus']:>7.3f} | "
        f"{fmt(r['mean_width_population']):>6} {fmt(r['mean_width_corpus']):>6} | "
        f"{r['zero_width_population']:>4} {r['zero_width_corpus']:>4} | {r['status']}"
        + (f"  ({r['notes']})" if r["notes"] else "")
    )


def main(argv=None):
    args = parse_args(argv)
    grid = json.load(open(args.grid))
    threshold = float(grid["pass_threshold"])
    draws = args.draws or int(grid["draws_per_cell"])
    cells = chosen_cells(grid, args.cells)
    fn = load_function(args.adapter, args.function)

    print(
        f"adapter {args.adapter}:{args.function}  grid {args.grid}  cells {len(cells)}  draws/cell {draws}"
        + ("" if draws == grid["draws_per_cell"] else f"  (grid says {grid['draws_per_cell']}: quick look only)")
    )
    head = (
        f"{'id':>3} {'p':>5} {'n':>4} {'N':>6} {'sens':>4} {'fa':>4} | {'cov_pop':>7} {'cov_cor':>7} | "
        f"{'ref_pop':>7} {'ref_cor':>7} | {'w_pop':>6} {'w_cor':>6} | {'zw_p':>4} {'zw_c':>4} | status"
    )
    print(head)
    print("-" * len(head))
    results = []
    for cell in cells:
        r = run_cell(fn, cell, draws, threshold)
        results.append(r)
        print(row(r), flush=True)
    fails = [r["id"] for r in results if r["status"] == "FAIL"]
    refused = [r["id"] for r in results if r["status"] == "ALL-REFUSED"]
    overall = "PASS" if not fails else "FAIL"
    print("-" * len(head))
    print(
        f"OVERALL: {overall}  ({len(results) - len(fails)}/{len(results)} cells not failing; "
        f"failing cells: {fails or 'none'}; all-refused cells: {refused or 'none'}; draws/cell {draws})"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "adapter": args.adapter,
                    "function": args.function,
                    "grid": args.grid,
                    "draws_per_cell": draws,
                    "overall": overall,
                    "failing_cells": fails,
                    "all_refused_cells": refused,
                    "cells": results,
                },
                f,
                indent=1,
            )
    return 0 if overall == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
