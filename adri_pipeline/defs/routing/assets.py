"""Group `routing`: the JEV benchmark's examples with frozen splits, and the benchmark run."""

import dagster as dg

from adri_pipeline.defs.metadata import markdown_table
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.routing.benchmark import RunConfig, build, report_folder
from adri_pipeline.routing.report import run_and_report


@dg.asset(group_name="routing", kinds={"duckdb"})
def routing_examples(adri: AdriSettings) -> dg.MaterializeResult:
    """Canonical examples and dev/calibration/test splits; fails if the frozen test split changed."""
    settings = adri.settings()
    dataset = build(RunConfig(dataset=settings.routing_dataset))
    counts = {s: len(dataset.in_split(s)) for s in ("dev", "calibration", "test")}
    return dg.MaterializeResult(
        data_version=dg.DataVersion(dataset.test_hash),
        metadata={"dataset": settings.routing_dataset, "examples": len(dataset.examples), **counts,
                  "test_split_sha256": dataset.test_hash},
    )


@dg.asset(group_name="routing", deps=[routing_examples], kinds={"duckdb"})
def routing_benchmark(adri: AdriSettings) -> dg.MaterializeResult:
    """Every candidate fitted on dev, calibrated on calibration, measured on test; report + plots."""
    import json

    import polars as pl

    settings = adri.settings()
    out_dir = report_folder(settings.warehouse.parent, settings.routing_dataset)
    candidates = [c for c in settings.routing_candidates.split(",") if c]
    report = run_and_report(RunConfig(dataset=settings.routing_dataset), candidates, adri.warehouse_access(),
                            out_dir, settings=settings)
    figures = json.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))
    rows = [{"candidate": name, "task": task, "accuracy": round(m["accuracy"], 3),
             "macro_f1": round(m.get("macro_f1", float("nan")), 3), "ece": round(m["ece"], 3),
             "aurc": round(m["aurc"], 3)}
            for name, result in figures["results"].items() for task, m in result["tasks"].items()]
    return dg.MaterializeResult(metadata={
        "report": dg.MetadataValue.path(str(report)),
        "reliability_plot": dg.MetadataValue.path(str(out_dir / "reliability_D1.png")),
        "coverage_plot": dg.MetadataValue.path(str(out_dir / "coverage_accuracy_D1.png")),
        "metrics": markdown_table(pl.DataFrame(rows)),
        "verdicts": dg.MetadataValue.json(figures["hypotheses"]),
    })
