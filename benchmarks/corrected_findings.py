"""Corrected findings (classification/corrected.py): do the corrected intervals cover the truth, and
what do they change on real abstracts?

1. **Synthetic** coverage: `draws` corpora from a seeded process with a known share (30 %), a model
   that misses a fifth of the value and says it of 15 % of the rest, 200 documents coded at random.
   The share of 95 % intervals that cover the process's share: model only, coders only, corrected;
   and of each corpus's own share: corrected, and "this corpus" (the finite-population estimate).
2. **Real**: the 393 real abstracts of ../shared/data/corpus not reserved in holdout_ids.txt,
   classified by the embedded zero-shot model in a temporary warehouse, corrected by the project's
   coded sample's random round (data/coders/pilot_coded.csv: its first 120 documents, drawn with
   `random.Random(20261130).sample` from those 393 and coded by hand by one person; data/coders/GUIDE.md).
   The zero-shot model was never trained on them. The 40 suggested documents of that file are left out:
   they were picked, not drawn. Skipped without ../shared/data.

    .venv/bin/python benchmarks/corrected_findings.py [draws] [--synthetic-only]
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.classification.coders import id_lines  # noqa: E402
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corrected import estimate  # noqa: E402
from adri_pipeline.classification.queries import corrected_findings  # noqa: E402
from adri_pipeline.classification.rounds import draw_random  # noqa: E402
from adri_pipeline.classification.service import classify_corpus_file  # noqa: E402
from adri_pipeline.config import DATA, SHARED_DATA, Settings  # noqa: E402
from adri_pipeline.reports.findings_text import corrected_lines  # noqa: E402

RANDOM_ROUND = 120  # data/coders/GUIDE.md: the first 120 documents of the file were drawn at random
DRAW_SEED = 20261130


def synthetic_coverage(draws: int) -> dict:
    rng = np.random.default_rng(2026)
    covered = {"model": 0, "coders": 0, "corrected": 0, "corrected_of_corpus": 0, "corpus_of_corpus": 0}
    widths = {"coders": [], "corrected": [], "corpus": []}
    for _ in range(draws):
        truth = rng.random(2000) < 0.3
        model = np.where(truth, rng.random(2000) < 0.8, rng.random(2000) < 0.15).astype(float)
        coded = np.zeros(2000, bool)
        coded[rng.choice(2000, 200, replace=False)] = True
        rows = pl.DataFrame(
            {"model": model, "gold": np.where(coded, truth, np.nan), "weight": np.where(coded, 1.0, np.nan)}
        ).with_columns(pl.all().fill_nan(None))
        found = estimate(rows)
        for name in ("model", "coders", "corrected"):
            covered[name] += found[f"{name}_low"] <= 0.3 <= found[f"{name}_high"]
        for name in ("corrected", "corpus"):
            covered[f"{name}_of_corpus"] += found[f"{name}_low"] <= truth.mean() <= found[f"{name}_high"]
        for name in widths:
            widths[name].append(found[f"{name}_high"] - found[f"{name}_low"])
    return {
        "draws": draws,
        **{f"coverage_{k}": v / draws for k, v in covered.items()},
        **{f"median_width_{k}": float(np.median(v)) for k, v in widths.items()},
    }


def real_abstracts(folder: Path) -> dict | None:
    corpus_folder = SHARED_DATA / "corpus"
    if not corpus_folder.is_dir():
        return None
    reserved = set(id_lines(corpus_folder / "holdout_ids.txt"))
    kept = [
        line
        for name in ("openalex_direito_alimentacao.jsonl", "capes_escola_sem_partido.jsonl")
        for line in (corpus_folder / name).read_text(encoding="utf-8").splitlines()
        if line.strip() and json.loads(line)["id"] not in reserved
    ]
    corpus = folder / "abstracts.jsonl"
    corpus.write_text("\n".join(kept) + "\n", encoding="utf-8")
    coded = pl.read_csv(DATA / "coders" / "pilot_coded.csv", infer_schema_length=0)
    drawn = list(dict.fromkeys(coded["doc_id"]))[:RANDOM_ROUND]
    codes = folder / "random_round.csv"
    coded.filter(pl.col("doc_id").is_in(drawn)).write_csv(codes)
    settings = Settings(warehouse=folder / "wh" / "adri.duckdb", corpus=corpus, backend="embedded")
    started = time.perf_counter()
    classify_corpus_file(settings)
    classified_s = time.perf_counter() - started
    draw_random(
        RunContext.load(settings), "pilot-random", 0, DRAW_SEED, drawn_ids=drawn
    )  # as `adri code draw --ids` records it
    found = corrected_findings(RunContext.load(settings.model_copy(update={"coders": codes})))
    return {"documents": len(kept), "coded": found.coded, "classified_s": round(classified_s, 1), "found": found}


def main() -> None:
    draws = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 500
    coverage = synthetic_coverage(draws)
    print(
        "synthetic (seeded process, biased model, 200 of 2,000 coded at random):",
        json.dumps({k: round(v, 3) for k, v in coverage.items()}),
    )
    if "--synthetic-only" in sys.argv:
        return
    with tempfile.TemporaryDirectory() as folder:
        real = real_abstracts(Path(folder))
        if real is None:
            print("real abstracts: skipped (no ../shared/data/corpus)")
            return
        print(
            f"\nreal abstracts: {real['documents']} classified by the embedded zero-shot model in "
            f"{real['classified_s']} s; corrected by {real['coded']} documents drawn at random and coded by hand"
        )
        print("\n".join(corrected_lines(real["found"])))


if __name__ == "__main__":
    main()
