"""Group `mirror`: shadow log -> sample -> judgements -> evaluation -> recommended configuration."""

import json

import dagster as dg
import polars as pl
import yaml

from adri_pipeline.defs.io_managers import versioned
from adri_pipeline.defs.metadata import file_hash, markdown_table
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.mirror.evaluate import (
    evaluate_point,
    evaluation_folder,
    judge,
    known_points,
    sample_for_judging,
    write_recommended_configuration,
)
from adri_pipeline.mirror.judges import make_judges
from adri_pipeline.mirror.shadow_log import ingest, read_log
from adri_pipeline.warehouse import store_mirror_evaluations

IO = "content_hash_io_manager"


def _records(settings) -> list[dict]:
    good, _ = read_log(settings.mirror_log)
    return [r.model_dump(mode="json") for r in good]


@dg.asset(group_name="mirror", kinds={"duckdb"})
def shadow_log(adri: AdriSettings) -> dg.MaterializeResult:
    """Validated shadow-log rows (table `shadow_log`); bad lines quarantined with their reason."""
    settings = adri.settings()
    kept, quarantined = ingest(settings.mirror_log, adri.warehouse_access())
    return dg.MaterializeResult(
        data_version=dg.DataVersion(file_hash(settings.mirror_log)),
        metadata={"log": str(settings.mirror_log), "kept": len(kept), "quarantined": len(quarantined),
                  "first_bad_lines": dg.MetadataValue.json(quarantined[:5])})


@dg.asset(group_name="mirror", deps=[shadow_log], io_manager_key=IO)
def mirror_sample(adri: AdriSettings) -> dg.Output:
    """Every disagreement and a seeded 10 % of agreements, per decision point."""
    settings = adri.settings()
    sampled = sample_for_judging(_records(settings))
    frame = pl.DataFrame([{**r, "state": json.dumps(r["state"], ensure_ascii=False)} for r in sampled])
    return versioned(frame)


@dg.asset(group_name="mirror", io_manager_key=IO)
def mirror_judgements(adri: AdriSettings, mirror_sample: pl.DataFrame) -> dg.Output:
    """Two judges label each sampled case on their own (ADRI_MIRROR_JUDGES)."""
    settings = adri.settings()
    points = known_points(settings.mirror_config)
    first, second = make_judges(settings.mirror_judges, settings)
    rows = [{**r, "state": json.loads(r["state"])} for r in mirror_sample.iter_rows(named=True)]
    judged = [j for name, point in points.items()
              for j in judge([r for r in rows if r["decision_point"] == name], point, first, second)]
    frame = pl.DataFrame([{**r, "state": json.dumps(r["state"], ensure_ascii=False)} for r in judged])
    return versioned(frame, judges=f"{first.name} + {second.name}")


@dg.asset(group_name="mirror", io_manager_key=IO)
def mirror_evaluation(adri: AdriSettings, mirror_judgements: pl.DataFrame) -> dg.Output:
    """Rule vs mirror accuracy when confident, coverage, errors, latency, cost, recommendation."""
    settings = adri.settings()
    records = _records(settings)
    judged = mirror_judgements.to_dicts()
    rows = []
    for name, point in known_points(settings.mirror_config).items():
        mine = [r for r in records if r["decision_point"] == name]
        if mine:
            evaluation = evaluate_point(name, point, mine, [j for j in judged if j["decision_point"] == name])
            rows.append({"decision_point": name, "log": str(settings.mirror_log),
                         "recommendation": evaluation["recommendation"],
                         "evaluation": json.dumps(evaluation, default=float)})
    frame = pl.DataFrame(rows)
    store_mirror_evaluations(adri.warehouse_access(), str(settings.mirror_log), frame)  # as `adri mirror evaluate`
    return versioned(frame, table=markdown_table(frame.select("decision_point", "recommendation")))


@dg.asset(group_name="mirror")
def recommended_gate_configuration(adri: AdriSettings, mirror_evaluation: pl.DataFrame) -> dg.MaterializeResult:
    """An unapproved control configuration file for a person to review and approve."""
    settings = adri.settings()
    evaluations = {r["decision_point"]: json.loads(r["evaluation"]) for r in mirror_evaluation.iter_rows(named=True)}
    points = {n: p for n, p in known_points(settings.mirror_config).items() if n in evaluations}
    out_dir = evaluation_folder(adri.warehouse_access(), settings.mirror_log)  # where `adri mirror evaluate` writes
    path = write_recommended_configuration(out_dir, points, evaluations)
    modes = {n: p["mode"] for n, p in yaml.safe_load(path.read_text(encoding="utf-8"))["points"].items()}
    return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(path)), "modes": dg.MetadataValue.json(modes)})
