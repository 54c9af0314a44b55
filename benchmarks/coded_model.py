"""The embedded model trained on the coders' codes: agreement (cross-validated) next to zero-shot, what
the suggested round of codes adds, and how long training and classifying take.

Real data: the project's coded sample (data/coders/pilot_coded.csv: 120 random documents, then 40 that
`adri suggest` chose) over ../shared/data/corpus. Figures come from one run, in a temporary warehouse.

    .venv/bin/python benchmarks/coded_model.py [--classify]

--vectors <warehouse> starts from a copy of that warehouse's cached vectors (the cold training time is then
not measured). --classify also times classifying the whole corpus folder (463 documents) with the trained
model; the answers are not looked at and the temporary warehouse is deleted (the holdout documents are among
them).
"""

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
from sklearn.model_selection import GroupKFold

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adri_pipeline.classification.agreement import agreement_table, load_coder_labels  # noqa: E402
from adri_pipeline.classification.backends.embedded import EmbeddedBackend  # noqa: E402
from adri_pipeline.classification.coded_model import TrainingParams, fit  # noqa: E402
from adri_pipeline.classification.coders import ZERO_SHOT, agreement, answers_frame, coded_sample, train  # noqa: E402
from adri_pipeline.classification.context import RunContext  # noqa: E402
from adri_pipeline.config import DATA, SHARED_DATA, Settings  # noqa: E402

CODERS = DATA / "coders" / "pilot_coded.csv"
RANDOM_ROUND = 120  # the first 120 coded documents were drawn at random (GUIDE.md)


def figures(table: pl.DataFrame) -> dict[str, str]:
    """variable -> 'kappa 0.41' or 'Jaccard 0.49'."""
    return {
        r["variable"]: (f"Jaccard {r['jaccard']:.3f}" if r["jaccard"] is not None else f"kappa {r['kappa']:.3f}")
        + f" ({100 * r['agreement_share']:.0f} %)"
        for r in table.iter_rows(named=True)
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--classify", action="store_true")
    parser.add_argument("--vectors", type=Path, help="a warehouse whose cached vectors to copy (skips embedding)")
    args = parser.parse_args()
    corpus = SHARED_DATA / "corpus"
    with tempfile.TemporaryDirectory() as folder:
        if args.vectors:
            shutil.copy(args.vectors, Path(folder) / "adri.duckdb")
        settings = Settings(warehouse=Path(folder) / "adri.duckdb", corpus=corpus, coders=CODERS, coders_corpus=corpus)
        run = RunContext.load(settings)
        model = time_training(run)
        cross_validated(settings, model)
        random_round_only(run, settings)
        if args.classify:
            time_classifying(settings)


def time_training(run: RunContext):
    """Training twice: the first embeds every coded document, the second finds their vectors cached."""
    started = time.perf_counter()
    model = train(run)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    train(run)
    warm = time.perf_counter() - started
    print(
        f"training on {len(model.documents)} coded documents: {cold:.1f} s cold (embedding them), "
        f"{warm:.1f} s with the vectors cached"
    )
    return model


def cross_validated(settings: Settings, model) -> None:
    """Agreement with the coders over every coded document, the trained model's cross-validated beside
    zero-shot's."""
    started = time.perf_counter()
    measured = agreement(RunContext.load(settings), cross_validated=True)
    print(
        f"\nall {len(model.documents)} coded documents, 5-fold cross-validated ({time.perf_counter() - started:.1f} s):"
    )
    by_model = {m: figures(measured.table.filter(pl.col("model") == m)) for m in measured.table["model"].unique()}
    trained_name = next(m for m in by_model if m != ZERO_SHOT)
    for variable in settings_variables(settings):
        print(
            f"  {variable:12s} trained {by_model[trained_name][variable]:26s} zero-shot {by_model[ZERO_SHOT][variable]}"
        )


def random_round_only(run: RunContext, settings: Settings) -> None:
    """Agreement on the random round alone, folds by document, trained with and without the suggested
    round: what the suggested codes add, measured where they were not chosen to be hard."""
    print(f"\nthe {RANDOM_ROUND} random documents only (the suggested 40 are harder by construction):")
    sample = coded_sample(run)
    first, suggested = sample.documents[:RANDOM_ROUND], sample.documents[RANDOM_ROUND:]
    coders = load_coder_labels(CODERS, sample.codebook)
    without, with_suggested = {}, {}
    for train_rows, test_rows in GroupKFold(n_splits=5).split(first, groups=[d.doc_id for d in first]):
        training = [first[i] for i in train_rows]
        for answers, extra in ((without, []), (with_suggested, suggested)):
            fitted = fit(training + extra, sample.codebook, TrainingParams(), "benchmark")
            for i in test_rows:
                answers[first[i].doc_id] = fitted.predict(first[i].vectors)[0]
    backend = EmbeddedBackend()
    backend.prepare(sample.codebook, None)
    zero_shot = {d.doc_id: backend.zero_shot(d.vectors) for d in first}
    rows = {
        name: figures(agreement_table(answers_frame(name, answers), coders, sample.codebook))
        for name, answers in (
            ("trained on 96", without),
            ("trained on 96 + 40 suggested", with_suggested),
            (ZERO_SHOT, zero_shot),
        )
    }
    for variable in settings_variables(settings):
        print(f"  {variable:12s} " + "  ".join(f"{name}: {rows[name][variable]:24s}" for name in rows))


def time_classifying(settings: Settings) -> None:
    """The whole corpus folder classified with the trained model, training included; the answers are not
    looked at."""
    from adri_pipeline.classification.service import classify_corpus_file

    run_settings = settings.model_copy(update={"backend": "embedded"})
    started = time.perf_counter()
    run, loaded = classify_corpus_file(run_settings)
    elapsed = time.perf_counter() - started
    print(
        f"\nclassifying {loaded.documents.height} documents with {run.model.model}: {elapsed:.0f} s "
        f"({elapsed / loaded.documents.height:.2f} s/doc, training included); "
        f"{run.report.classified} classified, {len(run.report.failed)} failed"
    )


def settings_variables(settings: Settings) -> list[str]:
    from adri_pipeline.classification.codebook import load_codebook

    return list(load_codebook(settings.codebook).variables)


if __name__ == "__main__":
    main()
