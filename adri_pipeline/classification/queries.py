"""What the corpus says and the results as analysts take them away: a model's (or the coders') answer
set, the findings with their intervals, the findings corrected by the coders' random sample, the models
ranked against the coders' gold, and the export. Nothing here calls a model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from adri_pipeline.classification.backends.base import is_zero_shot_baseline
from adri_pipeline.classification.codebook import Codebook
from adri_pipeline.classification.coders import holdout_ids
from adri_pipeline.classification.coding import without_gold
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corpus import (
    fingerprints,
)
from adri_pipeline.classification.corrected import (
    MIN_CODED_FOR_PLANNING,
    CorrectedFindings,
    corrected_by_group,
    cross_fitted_labels,
    estimation_sample,
    labels,
    model_errors,
    population_hash,
    still_to_code,
    tightest,
    worst_case_shares,
)
from adri_pipeline.classification.export import wide, write
from adri_pipeline.classification.findings import cross, shares, side_by_side
from adri_pipeline.classification.service import NoClassificationRun, recorded_model
from adri_pipeline.config import SAMPLE_CORPUS, Settings
from adri_pipeline.errors import AdriError
from adri_pipeline.warehouse import (
    Warehouse,
    coding_samples,
    corpus_files,
    exclusions,
    last_run,
    read_documents,
    read_results,
    result_sets,
)


def answer_set(context: RunContext, name: str | None) -> tuple[str, pl.DataFrame, int]:
    """(name, values, documents without an answer yet) of a stored model's answers — the model of the
    latest run when `name` is None — or, with name "coders", the coders' file (ADRI_CODERS) in the
    same shape (nothing pending)."""
    settings, warehouse, codebook = context.settings, context.warehouse, context.codebook
    if name == "coders":
        if settings.coders is None:
            raise NoClassificationRun("give the coders' file (--coders or ADRI_CODERS) to compare with the coders")
        from adri_pipeline.classification.agreement import load_coder_labels

        return "coders", load_coder_labels(settings.coders, codebook), 0
    model = name or recorded_model(warehouse, settings.principal_model).model
    values, _, pending = read_results(warehouse, model, codebook.content_hash)
    if not values.height:
        known = sorted({s["model"] for s in result_sets(warehouse) if s["codebook_hash"] == codebook.content_hash})
        raise NoClassificationRun(
            f"{warehouse.path}: no results of {model!r} for codebook {codebook.name} "
            f"v{codebook.version}; models with results: {', '.join(known) or 'none'}"
        )
    return model, values, pending


def of_source(values: pl.DataFrame, documents: pl.DataFrame, source: str | None) -> pl.DataFrame:
    """`values` of the documents read from the corpus file `source` (its path as it was given, or its
    name); all of them without a `source`. A file no document came from is an error naming those that
    did."""
    if source is None:
        return values
    sources = documents["source"].drop_nulls().unique().sort().to_list()
    matching = [s for s in sources if s == source or Path(s).name == source]
    if not matching:
        raise AdriError(
            f"--source {source!r}: no document was read from it; this warehouse's corpus files: "
            + ", ".join(sorted(Path(s).name for s in sources))
        )
    kept = documents.filter(pl.col("source").is_in(matching))["doc_id"]
    return values.filter(pl.col("doc_id").is_in(kept.implode()))


def counted_by_source(
    warehouse: Warehouse, values: pl.DataFrame, documents: pl.DataFrame
) -> tuple[dict[str, int], str | None]:
    """(documents counted per corpus file, by its name; a warning when the project's synthetic sample
    is counted beside other files). The sample is known by its content (the sha256 the warehouse
    recorded when it read the file), whatever it was called or copied to."""
    counted = (
        values.select("doc_id")
        .unique()
        .join(documents.select("doc_id", "source"), on="doc_id")
        .group_by("source")
        .len()
        .sort("source")
    )
    per = {source: n for source, n in counted.iter_rows()}
    sample = fingerprints([SAMPLE_CORPUS], [])["sha256"][0]
    recorded = corpus_files(warehouse, list(per))
    synthetic = [s for s in per if recorded.get(s, {}).get("sha256") == sample]
    warning = None
    if synthetic and len(per) > len(synthetic):
        warning = (
            f"{sum(per[s] for s in synthetic)} of the {sum(per.values())} documents counted are the "
            f"project's synthetic sample ({', '.join(Path(s).name for s in synthetic)}: abstracts invented "
            "for the demo); count the others alone with --source, or keep real work in a warehouse of its own"
        )
    return dict(sorted((Path(s).name, n) for s, n in per.items())), warning


@dataclass(frozen=True)
class Excluded:
    """The documents a finding does not count, and why."""

    no_abstract: int
    failed: int
    not_classified_yet: int


@dataclass(frozen=True)
class Findings:
    """What the corpus says for one answer set (`adri findings`, the review site's findings page): per
    variable the shares with 95 % intervals (findings.SHARE_SCHEMA), by year and by source. With a
    random coded sample and the coders' file, `corrected` and the models ranked against the gold
    (`models`), or why nothing could be corrected (`corrected_refused`); `cross` and `compare` when
    asked for."""

    model: str
    codebook: Codebook
    counted: int
    source: str | None
    counted_by_source: dict[str, int]
    mixed_warning: str | None
    zero_shot_baseline: bool
    excluded: Excluded
    shares: pl.DataFrame
    by_year: pl.DataFrame
    by_source: pl.DataFrame
    corrected: CorrectedFindings | None = None
    models: ModelsAgainstGold | None = None
    corrected_refused: str | None = None
    cross: pl.DataFrame | None = None
    compare: pl.DataFrame | None = None

    def grouped(self, by: str) -> pl.DataFrame:
        """The shares per year (`by` "year") or per source ("source")."""
        return {"year": self.by_year, "source": self.by_source}[by]


def findings(
    context: RunContext,
    model: str | None = None,
    compare: str | None = None,
    cross_variables: tuple[str, str] | None = None,
    width: float = 0.10,
    source: str | None = None,
) -> Findings:
    """What the corpus says for `model` (default: the latest run's): per variable the shares with 95 %
    intervals, by year and by source, optionally one variable against another and the shares of a
    second answer set (another model, or "coders") side by side; with a random coded sample and the
    coders' file, the shares corrected by it (`corrected`). Printed by `adri findings`, drawn on the
    review site's findings page."""
    warehouse, codebook = context.warehouse.existing(), context.codebook
    name, values, pending = answer_set(context, model)
    documents = read_documents(warehouse)
    values = of_source(values, documents, source)
    excluded = exclusions(warehouse, name, context.prompt.signature)
    by_source, mixed = counted_by_source(warehouse, values, documents)
    compared = None
    if compare:
        other, other_values, _ = answer_set(context, compare)
        compared = side_by_side(values, other_values, (name, other), codebook)
    return Findings(
        model=name,
        codebook=codebook,
        counted=values["doc_id"].n_unique(),
        source=source,
        counted_by_source=by_source,
        mixed_warning=mixed,
        zero_shot_baseline=is_zero_shot_baseline(name),
        excluded=Excluded(excluded["no_abstract"], excluded["failed"], max(pending - excluded["failed"], 0)),
        shares=shares(values, codebook),
        by_year=shares(values, codebook, "year", documents),
        by_source=shares(values, codebook, "source", documents),
        **_corrected_parts(context, name, values, documents, width, source),
        cross=cross(values, codebook, *cross_variables) if cross_variables else None,
        compare=compared,
    )


def _corrected_parts(
    context: RunContext, name: str, values: pl.DataFrame, documents: pl.DataFrame, width: float, source: str | None
) -> dict:
    """The findings' corrected shares and which model's are tightest (`corrected`, `models`), or why
    nothing could be corrected (`corrected_refused`); nothing when there is no coded random sample to
    correct with."""
    try:
        corrected_findings = corrected(context, name, values, width)
    except NotCorrectable as refused:
        return {"corrected_refused": str(refused)}
    if corrected_findings is None:
        return {}
    # which model's corrected findings are tightest: this model's are reused, not computed again
    return {
        "corrected": corrected_findings,
        "models": _against_gold(context, documents, width, source, corrected_findings),
    }


def corrected_findings(context: RunContext, model: str | None = None, width: float = 0.10) -> CorrectedFindings | None:
    """`adri findings`' corrected shares alone, for the `findings_corrected` asset (see corrected)."""
    context.warehouse.existing()
    name, values, _ = answer_set(context, model)
    return corrected(context, name, values, width)


@dataclass
class ModelsAgainstGold:
    """`adri findings --models`: every model with results for the codebook, corrected by one random
    coded sample. `tightest` ranks them (corrected.TIGHTEST_SCHEMA), `errors` holds each one's
    sensitivity and false alarms per share against the gold (corrected.ERRORS_SCHEMA)."""

    tightest: pl.DataFrame
    errors: dict[str, pl.DataFrame]
    rounds: list[str]


def models_against_gold(context: RunContext, width: float = 0.10) -> ModelsAgainstGold | None:
    """Each model's findings corrected by the same random coded sample, so a team picks the model whose
    corrected findings are tightest, not the one that looks most confident; None without a random
    sample or the coders' file."""
    return _against_gold(context, read_documents(context.warehouse.existing()), width)


def _against_gold(
    context: RunContext,
    documents: pl.DataFrame,
    width: float,
    source: str | None = None,
    done: CorrectedFindings | None = None,
) -> ModelsAgainstGold | None:
    """models_against_gold on what the caller has open; `done`, one model's corrected findings already
    computed (findings'), is used as it is; `source` restricts every model to one corpus file alike."""
    warehouse, codebook = context.warehouse, context.codebook
    found = []
    for model in sorted({s["model"] for s in result_sets(warehouse) if s["codebook_hash"] == codebook.content_hash}):
        if done is not None and model == done.model:
            found.append(done)
            continue
        values, _, _ = read_results(warehouse, model, codebook.content_hash)
        try:
            each = corrected(context, model, of_source(values, documents, source), width)
        except NotCorrectable:  # another corpus than the one drawn from, or no record of its training
            continue
        if each is not None:
            found.append(each)
    if not found:
        return None
    return ModelsAgainstGold(
        tightest(found), {f.model: model_errors(f.labels, codebook) for f in found}, found[0].rounds
    )


class NotCorrectable(AdriError, ValueError):
    """Corrected findings refused: their premises (a draw of this corpus, gold a model did not learn
    from) cannot be met."""


class CorpusMismatch(NotCorrectable):
    """A random draw applied to a corpus other than the one it was drawn from."""


def training_of(warehouse: Warehouse, model: str) -> dict | None:
    """What `model` learned from, as its latest run recorded it (the embedded backend's `coded`
    parameters: `trained_on`, the coded documents, and `training`, its settings); None for a model
    that declares no training on codes. Read from the record, never guessed from the name."""
    run = last_run(warehouse, model)
    coded = json.loads(run["params"] or "{}").get("coded") if run else None
    if coded is not None and "trained_on" not in coded:
        raise NotCorrectable(
            f"{model} learned from coded documents, but its run did not record which: corrected "
            "findings would measure its errors on its own training data; classify again to record "
            "them"
        )
    return coded


def model_labels(
    context: RunContext,
    model: str,
    values: pl.DataFrame,
    gold: pl.DataFrame,
    sample: pl.DataFrame,
    training: dict | None,
) -> tuple[pl.DataFrame, list[str]]:
    """(LABELS_SCHEMA rows the estimates are computed from, notes). A model that learned from drawn
    documents is corrected out of fold (corrected.cross_fitted_labels): its errors on its own
    training data are not its errors, and in-sample they narrow the interval to nothing."""
    from adri_pipeline.classification.coders import answers_frame, cross_fitted_answers

    codebook = context.codebook
    seen = set(training["trained_on"]) if training else set()
    if not seen & set(sample["doc_id"]):
        return labels(values, gold, sample, codebook), []
    drawn = sorted(set(sample["doc_id"]) & set(values["doc_id"]))
    try:
        held, rest = cross_fitted_answers(
            context, training["training"], sorted(seen), drawn, sorted(set(values["doc_id"]))
        )
    except ValueError as exc:
        raise NotCorrectable(
            f"{model} learned from {len(seen & set(drawn))} drawn document(s) and cannot be "
            f"refitted without each fold of them ({exc})"
        ) from None
    frames = [
        labels(answers_frame(model, held | answers).select("doc_id", "variable", "value"), gold, sample, codebook)
        for answers in rest
    ]
    return cross_fitted_labels(frames), [
        f"{model} learned from {len(seen & set(drawn))} of the {len(drawn)} drawn documents: corrected out of fold "
        f"({len(rest)}-fold cross-fitting: each drawn document answered by the model refitted without its fold, "
        "the others by the folds' majority), so its errors are measured on documents it did not see"
    ]


def drawn_from(samples: pl.DataFrame, rounds: list[str], corpus: set[str]) -> list[str]:
    """Notes on the corpus the `rounds` were drawn from; CorpusMismatch, naming both, when one of them
    was drawn from a corpus other than `corpus` (the documents to correct, reserved ones left out): a
    draw made before the rest was classified, after `--limit N`, or a `--source` cut, says nothing of
    the documents it could not draw."""
    here = population_hash(corpus)
    notes = []
    for (round_name,), part in samples.filter(pl.col("round").is_in(rounds)).group_by("round", maintain_order=True):
        recorded, size = part["population_hash"][0], part["corpus_documents"][0]
        if recorded is None:
            notes.append(
                f"round {round_name} was drawn before draws recorded their corpus: that it was drawn from "
                "these documents is not checked"
            )
        elif recorded != here:
            raise CorpusMismatch(
                f"round {round_name} was drawn from {size} documents (corpus {recorded[:12]}); the "
                f"documents to correct are {len(corpus)} (corpus {here[:12]}), reserved ones left "
                "out: a draw corrects only the corpus it was drawn from; draw a round of this one"
            )
    return notes


def document_groups(warehouse: Warehouse, values: pl.DataFrame) -> dict[str, dict[str, str]]:
    """Per grouping ("year", "source": the corpus file's name), each answered document's group."""
    documents = read_documents(warehouse, values["doc_id"].unique().to_list())
    years = documents["year"].cast(pl.String).fill_null("unknown")
    sources = [Path(s).name if s else "unknown" for s in documents["source"]]
    return {"year": dict(zip(documents["doc_id"], years)), "source": dict(zip(documents["doc_id"], sources))}


def gold_of(settings: Settings, codebook: Codebook) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(gold: doc_id, variable, value; unresolved disagreements) of the coders' file."""
    from adri_pipeline.classification.agreement import load_codes
    from adri_pipeline.classification.coding import gold_codes

    gold, unresolved = gold_codes(load_codes(settings.coders, codebook))
    return gold.unique(["doc_id", "variable"], keep="last", maintain_order=True).select(
        "doc_id", "variable", "value"
    ), unresolved


def missing_gold_notes(missing: pl.DataFrame) -> list[str]:
    """One note per variable naming its drawn documents without gold."""
    notes = []
    for (variable,), part in missing.group_by("variable", maintain_order=True):
        reasons = "; ".join(
            f"{reason}: {', '.join(group['doc_id'].sort().head(8))}{' …' if group.height > 8 else ''}"
            for (reason,), group in part.group_by("reason", maintain_order=True)
        )
        notes.append(
            f"{variable}: {part.height} drawn document(s) without gold ({reasons}); its intervals are "
            "worst-case bounds (that gold taken as 0 and as 1): adjudicate or code them "
            "(adri code pending --round R)"
        )
    return notes


def corrected(context: RunContext, model: str, values: pl.DataFrame, width: float = 0.10) -> CorrectedFindings | None:
    """`model`'s shares corrected by the coders' gold (ADRI_CODERS) on the documents drawn at random
    (`adri code start --random N`), classification/corrected.py; None without a random draw or a
    coders' file. Reserved documents are not counted; a draw of another corpus is refused
    (CorpusMismatch); drawn documents without gold bound the intervals (worst_case_shares)."""
    settings, warehouse, codebook = context.settings, context.warehouse, context.codebook
    samples = coding_samples(warehouse)
    sample, rounds, notes = estimation_sample(samples, codebook.content_hash)
    if not rounds or settings.coders is None or model == "coders":
        return None
    values = values.filter(~pl.col("doc_id").is_in(list(holdout_ids(settings))))
    notes += drawn_from(samples, rounds, set(values["doc_id"]))
    gold, unresolved = gold_of(settings, codebook)
    coded_variables = gold.join(sample, on="doc_id")["variable"].unique().to_list()
    missing = without_gold(
        list(sample["doc_id"]), gold, unresolved, [v for v in codebook.variables if v in coded_variables]
    )
    missing = missing.join(values.select("doc_id", "variable").unique(), on=["doc_id", "variable"]).join(
        sample, on="doc_id"
    )
    rows, fitted = model_labels(context, model, values, gold, sample, training_of(warehouse, model))
    notes += fitted
    table = worst_case_shares(rows, missing, codebook, width)
    notes += missing_gold_notes(missing)
    by_group = {
        by: corrected_by_group(rows, missing, groups, codebook, width)
        for by, groups in document_groups(warehouse, values).items()
    }
    coded = rows.filter(pl.col("gold").is_not_null())["doc_id"].n_unique()
    if coded < MIN_CODED_FOR_PLANNING:
        notes.append(
            f"{coded} random document(s) coded: the intervals are rough below {MIN_CODED_FOR_PLANNING}, "
            "and how many more to code is not planned yet"
        )
    return CorrectedFindings(
        model,
        rounds,
        sample.height,
        coded,
        width,
        table,
        still_to_code(table),
        still_to_code(table, "corpus_coded_for_width"),
        rows,
        notes,
        missing,
        by_group,
    )


def export_results(
    context: RunContext,
    fmt: str,
    output: Path,
    model: str | None = None,
    evidence: bool = False,
    source: str | None = None,
) -> tuple[Path, int]:
    """`adri export`: one row per document with an answer that follows the codebook (of the corpus file
    `source` only, if given); returns (path, rows)."""
    warehouse, codebook = context.warehouse.existing(), context.codebook
    _, values, _ = answer_set(context, model)
    documents = read_documents(warehouse)
    frame = wide(of_source(values, documents, source), documents, codebook, evidence=evidence)
    return write(frame, fmt, output), frame.height
