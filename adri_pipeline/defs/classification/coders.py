"""Group `coders`: the coders' file (observed by content hash), the embedded model trained on it, and
how far the coders of a coding round agree."""

import dagster as dg
import polars as pl

from adri_pipeline.classification.agreement import CODER_AGREEMENT_SCHEMA
from adri_pipeline.classification.coded_model import TRAINING_VERSION
from adri_pipeline.classification.coders import (
    RoundMeasures,
    agreement,
    coded_sample,
    model_path,
    round_measures,
    train,
)
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.corrected import CORRECTED_SCHEMA, CorrectedFindings
from adri_pipeline.classification.queries import corrected_findings
from adri_pipeline.defs.automation import AFTER_UPSTREAM
from adri_pipeline.defs.classification.codebook import prompt_signature, recorded_codebook
from adri_pipeline.defs.classification.corpus import corpus
from adri_pipeline.defs.io_managers import versioned
from adri_pipeline.defs.metadata import file_hash, table_metadata
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings


def coder_file_version(settings) -> str:
    """The coders' file's data version: the hash of the file, "none" when not configured."""
    return file_hash(settings.coders) if settings.coders else "none"


@dg.observable_source_asset(group_name="coders")
def coder_file(adri: AdriSettings) -> dg.DataVersion:
    """The coders' CSV (ADRI_CODERS), observed by new_codes_sensor each time it looks (no run
    needed) or from the UI; its version is coder_file_version."""
    return dg.DataVersion(coder_file_version(adri.settings()))


@dg.asset(
    code_version=TRAINING_VERSION,
    pool=DUCKDB_WRITER,
    group_name="coders",
    deps=[coder_file, prompt_signature, corpus],
    kinds={"duckdb"},
)
def coded_model(context: dg.AssetExecutionContext, adri: AdriSettings) -> dg.MaterializeResult:
    """The embedded model fitted on the coders' codes, stored beside the warehouse where classification
    loads it (no second fit). Its data version is the fit's digest (coder file, coded texts, codebook,
    settings), the same digest that is in the model name and every cache key of its answers: new codes
    reclassify with the new model (reclassify_after_refit_sensor), and nothing else. The metadata holds
    the cross-validated agreement next to the zero-shot model's on the same documents."""
    settings = adri.settings()
    if settings.coders is None:
        return dg.MaterializeResult(
            data_version=dg.DataVersion("zero-shot"),
            metadata={"coders": "none configured (ADRI_CODERS): the embedded model stays zero-shot"},
        )
    run = RunContext.load(settings, recorded_codebook(context, adri))
    sample = coded_sample(run)  # read once: the fit and its cross-validation share it
    model = train(run, sample=sample)
    measured = agreement(run, cross_validated=True, sample=sample)
    context.log.info(f"coded model {model.digest[:12]} fitted on {len(model.documents)} documents")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(model.digest),
        metadata={
            "digest": model.digest,
            "path": dg.MetadataValue.path(str(model_path(settings, model.digest))),
            "coders": str(settings.coders),
            "documents": len(model.documents),
            "never_predicted": str({k: v for k, v in model.never_predicted.items() if v}),
            "agreement": table_metadata(measured.table),
        },
    )


# Krippendorff (2004): alpha >= 0.800 to rely on a variable, >= 0.667 for tentative conclusions
ALPHA_TENTATIVE = 0.667


@dg.asset(
    code_version="1",
    pool=DUCKDB_WRITER,
    group_name="coders",
    deps=[coder_file],
    io_manager_key="content_hash_io_manager",
    automation_condition=AFTER_UPSTREAM,
    check_specs=[dg.AssetCheckSpec("coders_agree_enough", asset="coder_agreement", blocking=False)],
)
def coder_agreement(context: dg.AssetExecutionContext, adri: AdriSettings):
    """Coder vs coder on the blind pass of the coders' file's rounds (`adri code pull` writes one),
    per (round, variable): agreement, Cohen's kappa, Krippendorff's alpha. The metadata holds the
    gold's sources, the disagreements not yet adjudicated and the coders' evidence audit. Its check,
    `coders_agree_enough`, is judged on the same measures (the file and the texts read once). The codes
    are read against the codebook prompt_signature recorded."""
    settings = adri.settings()
    measures = round_measures(RunContext.load(settings, recorded_codebook(context, adri))) if settings.coders else None
    if measures is None:
        context.log.info("no coders' file with named coders (ADRI_CODERS): coder agreement left empty")
        yield versioned(pl.DataFrame(schema=CODER_AGREEMENT_SCHEMA), coders=str(settings.coders or "none configured"))
        yield dg.AssetCheckResult(
            check_name="coders_agree_enough", passed=True, description="no coding round in the coders' file"
        )
        return
    yield versioned(
        measures.between_coders,
        coders=str(settings.coders),
        table=table_metadata(measures.between_coders),
        unresolved=measures.unresolved.height,
        gold=table_metadata(measures.gold_sources),
        evidence=table_metadata(measures.coder_audits),
    )
    yield coders_agree_enough(measures)


def coders_agree_enough(measures: RoundMeasures) -> dg.AssetCheckResult:
    """Every variable's Krippendorff's alpha at least 0.667 (Krippendorff's floor for tentative
    conclusions), and no disagreement left without adjudication; a failure names them."""
    low = measures.between_coders.filter(pl.col("alpha").is_null() | (pl.col("alpha") < ALPHA_TENTATIVE))
    problems = [
        f"alpha below {ALPHA_TENTATIVE} on {round_name}/{variable} ({alpha})"
        for round_name, variable, alpha in low.select("round", "variable", "alpha").iter_rows()
    ]
    if measures.unresolved.height:
        problems.append(
            f"{measures.unresolved.height} disagreement(s) not adjudicated: "
            + ", ".join(f"{d}/{v}" for d, v in measures.unresolved.select("doc_id", "variable").iter_rows())
        )
    return dg.AssetCheckResult(
        check_name="coders_agree_enough",
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(problems) or "every variable's alpha at least 0.667, every disagreement adjudicated",
        metadata={"variables": measures.between_coders.height, "unresolved": measures.unresolved.height},
    )


@dg.asset(
    code_version="1",
    pool=DUCKDB_WRITER,
    group_name="coders",
    deps=[coder_agreement, dg.AssetKey("classification_results")],
    io_manager_key="content_hash_io_manager",
    automation_condition=AFTER_UPSTREAM,
    check_specs=[dg.AssetCheckSpec("estimation_sample_fit", asset="findings_corrected", blocking=False)],
)
def findings_corrected(context: dg.AssetExecutionContext, adri: AdriSettings):
    """The principal model's shares corrected by the coders' gold on the documents drawn at random
    (classification/corrected.py, docs/findings.md): per (variable, value) the model-only, coders-only,
    corrected and this-corpus shares with 95 % intervals, for the whole corpus (`grouped_by` empty) and per
    year and per source, each group corrected by its own coded documents. Its check, `estimation_sample_fit`,
    warns when there is no random sample, when it is too small for the stated width, or when it was drawn
    under another version of the codebook. Computed on the codebook prompt_signature recorded."""
    settings = adri.settings()
    found = corrected_findings(RunContext.load(settings, recorded_codebook(context, adri))) if settings.coders else None
    if found is None:
        context.log.info(
            "no random coding round with codes (adri code start --random N, ADRI_CODERS): nothing to "
            "correct the model's shares with"
        )
        yield versioned(
            pl.DataFrame(
                schema={"model": pl.String, "grouped_by": pl.String, "group_name": pl.String, **CORRECTED_SCHEMA}
            )
        )
        yield dg.AssetCheckResult(
            check_name="estimation_sample_fit",
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            description="no random coded sample: the findings are the model's labels alone",
        )
        return
    table = _corrected_table(found)
    yield versioned(
        table,
        model=found.model,
        rounds=", ".join(found.rounds),
        coded=found.coded,
        to_code=str(found.to_code),
        to_code_corpus=str(found.to_code_corpus),
        table=table_metadata(table),
    )
    yield estimation_sample_fit(found)


def _corrected_table(found: CorrectedFindings) -> pl.DataFrame:
    """The whole corpus's corrected shares and each group's, in one table an analyst filters by
    `grouped_by` (empty for the whole corpus) and `group_name`."""
    return pl.concat(
        [
            found.table.select(
                pl.lit(found.model).alias("model"),
                pl.lit("").alias("grouped_by"),
                pl.lit("").alias("group_name"),
                pl.all(),
            )
        ]
        + [
            groups.select(
                pl.lit(found.model).alias("model"),
                pl.lit(by).alias("grouped_by"),
                pl.col("group").alias("group_name"),
                *CORRECTED_SCHEMA,
            )
            for by, groups in found.by_group.items()
        ]
    )


def estimation_sample_fit(found: CorrectedFindings) -> dg.AssetCheckResult:
    """Warns when the random sample is too small for the target width (or too small to plan with), or
    was drawn under another version of the codebook; a failure says which variables and how many more."""
    short = {v: n for v, n in found.to_code.items() if n is None or n > 0}
    problems = list(found.notes)
    if short:
        problems.append(
            f"not yet {100 * found.width:.0f} points wide: "
            + ", ".join(f"{v} ({'not planned' if n is None else f'{n} more'})" for v, n in short.items())
        )
    return dg.AssetCheckResult(
        check_name="estimation_sample_fit",
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(problems) or f"every corrected interval at most {100 * found.width:.0f} points wide",
        metadata={"coded": found.coded, "drawn": found.drawn, "rounds": ", ".join(found.rounds)},
    )
