"""Group `routing`: the JEV benchmark's examples with frozen splits, and the benchmark run."""

import dagster as dg
import polars as pl

from adri_pipeline import strict_json
from adri_pipeline.defs.metadata import table_metadata, warehouse_table
from adri_pipeline.defs.resources import DUCKDB_WRITER, AdriSettings
from adri_pipeline.jev.serialize import SERIALIZER_VERSION
from adri_pipeline.routing import service
from adri_pipeline.warehouse.catalog import table_description


@dg.asset(code_version=SERIALIZER_VERSION, pool=DUCKDB_WRITER, group_name="routing", kinds={"duckdb"})
def routing_examples(adri: AdriSettings) -> dg.MaterializeResult:
    """Canonical examples and dev/calibration/test splits; the check `frozen_test_split` says
    whether the test split is the one frozen, and blocks the benchmark when it is not."""
    settings = adri.settings()
    dataset = service.build_examples(settings, raise_on_change=False)
    counts = {s: len(dataset.in_split(s)) for s in ("dev", "calibration", "test")}
    return dg.MaterializeResult(
        data_version=dg.DataVersion(dataset.test_hash),
        metadata={
            "dataset": settings.routing_dataset,
            "examples": len(dataset.examples),
            **counts,
            "test_split_sha256": dataset.test_hash,
        },
    )


@dg.asset_check(asset=routing_examples, blocking=True)
def frozen_test_split(context: dg.AssetCheckExecutionContext, adri: AdriSettings) -> dg.AssetCheckResult:
    """The test split is frozen before any tuning; a changed one fails here and the benchmark does not run."""
    event = context.instance.get_latest_materialization_event(routing_examples.key)
    test_hash = event.asset_materialization.metadata["test_split_sha256"].value
    unchanged, description = service.frozen_split_status(adri.settings(), test_hash)
    return dg.AssetCheckResult(passed=unchanged, description=description, metadata={"test_split_sha256": test_hash})


@dg.asset(code_version="1", pool=DUCKDB_WRITER, group_name="routing", deps=[routing_examples], kinds={"duckdb"})
def routing_benchmark(adri: AdriSettings) -> dg.MaterializeResult:
    """Every candidate fitted on dev, calibrated on calibration, measured on test; report + plots.
    Its table metadata describes `routing_predictions`."""
    run = service.benchmark(adri.settings())
    rows = pl.DataFrame(
        [
            {
                "candidate": name,
                "task": task,
                "accuracy": round(m.accuracy, 3),
                "macro_f1": round(m.macro_f1 if m.macro_f1 is not None else float("nan"), 3),
                "ece": round(m.ece, 3),
                "aurc": round(m.aurc, 3),
            }
            for name, result in run.results.items()
            for task, m in result.tasks.items()
        ]
    )
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.path(str(run.report)),
            "reliability_plot": dg.MetadataValue.path(str(run.report.parent / "reliability_D1.png")),
            "coverage_plot": dg.MetadataValue.path(str(run.report.parent / "coverage_accuracy_D1.png")),
            "metrics": table_metadata(rows),
            # undefined figures null, an interval too few decisions support as its reason (strict JSON)
            "verdicts": dg.MetadataValue.json({name: strict_json.plain(h) for name, h in run.hypotheses.items()}),
            **warehouse_table(table_description(adri.warehouse_access(), "routing_predictions")),
        }
    )
