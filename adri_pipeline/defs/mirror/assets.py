"""Group `mirror`: shadow log -> sample -> judgements -> evaluation -> recommended configuration."""

import json
from pathlib import Path

import dagster as dg
import polars as pl

from adri_pipeline import strict_json
from adri_pipeline.defs.io_managers import versioned
from adri_pipeline.defs.metadata import file_hash, table_metadata, warehouse_table
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings
from adri_pipeline.mirror import service
from adri_pipeline.mirror.approval import EVALUATION_FILE
from adri_pipeline.mirror.results import MirrorReport
from adri_pipeline.warehouse.catalog import table_description

IO = "content_hash_io_manager"


def _as_rows(cases: list[dict]) -> pl.DataFrame:
    return pl.DataFrame([{**r, "state": json.dumps(r["state"], ensure_ascii=False)} for r in cases])


def _as_cases(frame: pl.DataFrame) -> list[dict]:
    return [{**r, "state": json.loads(r["state"])} for r in frame.iter_rows(named=True)]


@dg.asset(code_version="1", pool=DUCKDB_WRITER, group_name="mirror", kinds={"duckdb"})
def shadow_log(adri: AdriSettings) -> dg.MaterializeResult:
    """Validated shadow-log rows (table `shadow_log`); bad lines quarantined with their reason."""
    settings = adri.settings()
    warehouse = adri.warehouse_access()
    shadow = service.decision_records(settings, warehouse)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(file_hash(settings.mirror_log)),
        metadata={
            "log": str(settings.mirror_log),
            "kept": shadow.kept,
            "quarantined": len(shadow.quarantined),
            "first_bad_lines": dg.MetadataValue.json(shadow.quarantined[:5]),
            **warehouse_table(table_description(warehouse, "shadow_log")),
        },
    )


@dg.asset_check(asset=shadow_log, blocking=False)
def shadow_log_quarantine(adri: AdriSettings) -> dg.AssetCheckResult:
    """Every line of the shadow log is valid; bad ones are quarantined (redacted) and named here."""
    quarantined = service.decision_records(adri.settings()).quarantined
    first = "; ".join(f"line {b['line']}: {b['error']}" for b in quarantined[:3])
    return dg.AssetCheckResult(
        passed=not quarantined,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{len(quarantined)} line(s) quarantined" + (f" ({first})" if first else ""),
        metadata={"quarantined": len(quarantined)},
    )


@dg.asset(code_version="1", pool=DUCKDB_WRITER, group_name="mirror", deps=[shadow_log], io_manager_key=IO)
def mirror_sample(adri: AdriSettings) -> dg.Output:
    """Per decision point, every disagreement and a seeded 10 % of agreements."""
    settings = adri.settings()
    return versioned(_as_rows(service.sample(settings, service.decision_records(settings).records)))


@dg.asset(code_version="1", pool=DUCKDB_WRITER, group_name="mirror", io_manager_key=IO)
def mirror_judgements(adri: AdriSettings, mirror_sample: pl.DataFrame) -> dg.Output:
    """Two judges label each sampled case on their own (ADRI_MIRROR_JUDGES)."""
    judged, judges = service.judgements(adri.settings(), _as_cases(mirror_sample))
    return versioned(_as_rows(judged), judges=" + ".join(j["name"] for j in judges))


@dg.asset(code_version="1", pool=DUCKDB_WRITER, group_name="mirror", io_manager_key=IO)
def mirror_evaluation(adri: AdriSettings, mirror_judgements: pl.DataFrame) -> dg.Output:
    """Rule vs mirror accuracy when confident, coverage, errors, latency, cost, recommendation."""
    settings = adri.settings()
    evaluated = service.evaluations(settings, service.decision_records(settings).records, _as_cases(mirror_judgements))
    frame = service.store_evaluations(settings, adri.warehouse_access(), evaluated)
    # each point's gain interval, or why there is none ("not enough data (n = 1)")
    intervals = {name: strict_json.plain(e.gain_ci95) for name, e in evaluated.items()}
    return versioned(
        frame,
        table=table_metadata(frame.select("decision_point", "recommendation")),
        gain_ci95=dg.MetadataValue.json(intervals),
    )


@dg.asset(code_version="1", pool=DUCKDB_WRITER, group_name="mirror")
def recommended_gate_configuration(adri: AdriSettings, mirror_evaluation: pl.DataFrame) -> dg.MaterializeResult:
    """The configuration the evaluation supports and the dated evaluation report a person approves
    each point on (`adri mirror approve POINT --evaluation mirror_evaluation.json`)."""
    evaluated = {
        r["decision_point"]: MirrorReport.stored(r["evaluation"]) for r in mirror_evaluation.iter_rows(named=True)
    }
    report = service.recommend(adri.settings(), adri.warehouse_access(), evaluated)
    path = Path(report.recommended_configuration)
    modes = {n: e.recommended_mode for n, e in evaluated.items()}
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(path)),
            "evaluation": dg.MetadataValue.path(str(path.parent / EVALUATION_FILE)),
            "may_be_approved_for": dg.MetadataValue.json(modes),
        }
    )
