"""Every share in the warehouse in one unit (issue 55): a fraction 0-1 in a column named `*_share`, after
the pipeline writes it and after a warehouse (or the shared ledger) that held percentages migrates."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb
import psycopg

from adri_pipeline.classification.results import ClassificationFigures
from adri_pipeline.defs.classification.assets import evidence_audits, validation_agreement
from adri_pipeline.defs.classification.coders import coder_agreement, coder_file
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.in_process import materialize_graph, resources_for
from adri_pipeline.warehouse import Warehouse, migrate
from adri_pipeline.warehouse.catalog import relations, uncommented
from adri_pipeline.warehouse.connection import DUCKDB, MigrationDialect
from adri_pipeline.warehouse.shared import POSTGRES, SharedLedger
from adri_pipeline_tests.classification.helpers import ROUND, round_file
from adri_pipeline_tests.conftest import SAMPLE

# a run's figures as ClassificationFigures.model_dump_json wrote them before migration 0020: percentages
FIGURES_IN_PERCENT = json.dumps(
    {
        "documents": 4,
        "pending": 1,
        "json_valid_first_try_pct": 100.0,
        "valid_first_try_pct": 75.0,
        "retry_pct": 25.0,
        "seconds_median": 0.1,
        "seconds_p90": 0.2,
        "evidence": {"literal_pct": 33.3, "approximate_pct": 66.7, "absent_pct": 0.0, "waived": 1, "over_20_words": 0},
        "evidence_by_variable": {
            "abordagem": {
                "literal_pct": 75.0,
                "approximate_pct": 25.0,
                "absent_pct": 0.0,
                "waived": 0,
                "over_20_words": 0,
            }
        },
    }
)


def schema_until(dialect: MigrationDialect, last: int, tmp_path: Path) -> MigrationDialect:
    """`dialect` with only its migrations up to `last`: the schema a release that shipped `last` built."""
    folder = tmp_path / f"schema_until_{last}"
    (folder / "migrations").mkdir(parents=True)
    for path in sorted((dialect.folder / "migrations").glob("*.sql")):
        if int(path.stem.partition("_")[0]) <= last:
            shutil.copy(path, folder / "migrations")
    return replace(dialect, folder=folder)


def assert_figures_in_shares(stored: str) -> None:
    assert "_pct" not in stored
    figures = ClassificationFigures.model_validate_json(stored)
    assert (figures.json_valid_first_try_share, figures.valid_first_try_share, figures.retry_share) == (1.0, 0.75, 0.25)
    evidence = figures.evidence
    assert (evidence.literal_share, evidence.approximate_share, evidence.absent_share) == (0.333, 0.667, 0.0)
    assert (figures.documents, figures.pending, evidence.waived, figures.seconds_p90) == (4, 1, 1, 0.2)
    assert figures.evidence_by_variable["abordagem"].literal_share == 0.75


def test_a_warehouse_made_at_migration_19_holds_its_percentages_as_shares_after_migrating(tmp_path):
    path = tmp_path / "adri.duckdb"
    with duckdb.connect(str(path)) as con:
        migrate(con, schema_until(DUCKDB, 19, tmp_path))
        con.execute(
            "INSERT INTO classification_figures "
            "VALUES ('m', 'h', '*', 4, 100.0, 75.0, 25.0, 33.3, 66.7, 0.0, 1, 0, 0.1, 0.2);"
            "INSERT INTO evidence_audits VALUES ('m', 'h', 'abordagem', 4, 75.0, 25.0, 0.0, 0);"
            "INSERT INTO validation_agreement VALUES ('m', 'abordagem', 'value', 4, 75.0, 0.5, NULL);"
            "INSERT INTO coder_agreement VALUES ('round-1', 'abordagem', 'value', 2, 4, 75.0, 0.636, 0.667)"
        )
        con.execute(
            "INSERT INTO classification_runs (run_id, figures) VALUES ('old', ?), ('raised', NULL)",
            [FIGURES_IN_PERCENT],
        )
    with Warehouse(path).connect() as con:
        figures = con.execute(
            "SELECT json_valid_first_try_share, valid_first_try_share, retry_share, literal_share, approximate_share, "
            "absent_share FROM classification_figures"
        ).fetchall()
        audits = con.execute("SELECT literal_share, approximate_share, absent_share FROM evidence_audits").fetchall()
        agreements = con.execute(
            "SELECT agreement_share FROM validation_agreement UNION ALL SELECT agreement_share FROM coder_agreement"
        ).fetchall()
        runs = dict(con.execute("SELECT run_id, CAST(figures AS VARCHAR) FROM classification_runs").fetchall())
        described = relations(con)
    assert figures == [(1.0, 0.75, 0.25, 0.333, 0.667, 0.0)]
    assert audits == [(0.75, 0.25, 0.0)] and agreements == [(0.75,), (0.75,)]
    assert_figures_in_shares(runs["old"])
    assert runs["raised"] is None
    assert [f"{r.name}.{c.name}" for r in described for c in r.columns if c.name.endswith("_pct")] == []
    assert uncommented(described) == []


def test_the_shared_ledgers_runs_hold_their_figures_in_shares_after_migrating(ledger_url, tmp_path):
    """A pull copies the shared ledger's runs into the warehouse whole: their figures are converted
    there too, or the next pull would bring percentages back."""
    with psycopg.connect(ledger_url) as con:
        migrate(con, schema_until(POSTGRES, 3, tmp_path))
        con.execute(
            "INSERT INTO classification_runs (run_id, figures) VALUES ('old', %s), ('range', NULL)",
            [FIGURES_IN_PERCENT],
        )
    with SharedLedger(ledger_url).connect() as con:
        runs = dict(con.execute("SELECT run_id, figures FROM classification_runs").fetchall())
    assert_figures_in_shares(runs["old"])
    assert runs["range"] is None


def shares_outside_0_to_1(con: duckdb.DuckDBPyConnection) -> tuple[list[str], set[str]]:
    """(the `*_share` columns holding a value outside 0-1, the tables and views with a share in them),
    over every DOUBLE `*_share` column; NaN (no estimate) is not a share."""
    outside, filled = [], set()
    columns = con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE NOT internal AND data_type = 'DOUBLE' AND suffix(column_name, '_share')"
    ).fetchall()
    for table, column in columns:
        values, wrong = con.execute(
            f'SELECT count("{column}") FILTER (WHERE NOT isnan("{column}")), '
            f'count(*) FILTER (WHERE NOT isnan("{column}") AND "{column}" NOT BETWEEN 0 AND 1) FROM "{table}"'
        ).fetchall()[0]
        if wrong:
            outside.append(f"{table}.{column}")
        if values:
            filled.add(table)
    return outside, filled


def figure_shares(figures: dict) -> list[tuple[str, float | None]]:
    """(key, value) of every key of a run's figures JSON, nested ones included."""
    found = []
    for key, value in figures.items():
        found += figure_shares(value) if isinstance(value, dict) else [(key, value)]
    return found


def test_every_share_the_pipeline_stores_is_a_fraction_0_to_1_named_share(dagster_instance, tmp_path, ollama_stub):
    """The sample classified as the demo classifies it, its evidence audits and, with a coding round for
    the coders, both agreement tables built: no `*_pct` column is left, and every `*_share` column and
    every share in the runs' figures lies in 0-1 (failed before: the figures, the audits and the
    agreements were percentages in `*_pct` columns)."""
    adri = AdriSettings(
        warehouse=str(tmp_path / "wh" / "adri.duckdb"),
        backend="ollama",
        model="qwen-test",
        ollama_hosts=ollama_stub.host,
        corpus=str(SAMPLE),
        coders=str(round_file(tmp_path, ROUND)),
    )
    assert materialize_graph(dagster_instance, adri, jobs=("classify",)).classify.success  # and its results
    built = [evidence_audits, validation_agreement, coder_agreement]
    dg.materialize(
        [coder_file, *built],
        instance=dagster_instance,
        resources=resources_for(adri),
        selection=[asset.key for asset in built],
    )
    with duckdb.connect(adri.warehouse, read_only=True) as con:
        in_percent = con.execute(
            "SELECT table_name || '.' || column_name FROM duckdb_columns() WHERE suffix(column_name, '_pct')"
        ).fetchall()
        outside, filled = shares_outside_0_to_1(con)
        runs = [json.loads(row[0]) for row in con.execute("SELECT figures FROM classification_runs").fetchall()]
    assert in_percent == [] and outside == []
    assert {"classification_figures", "evidence_audits", "validation_agreement", "coder_agreement"} <= filled
    figures = [pair for run in runs if run is not None for pair in figure_shares(run)]
    assert figures and not [key for key, _ in figures if key.endswith("_pct")]
    assert all(0 <= value <= 1 for key, value in figures if key.endswith("_share") and value is not None)
    assert any(key.endswith("_share") and value is not None for key, value in figures)
