"""`adri sql` on the analyst snapshot, the saved questions in docs/queries.sql, and the snapshot kept
as new as the warehouse after the commands that write what analysts query."""

from pathlib import Path

import duckdb
import pytest

from adri_pipeline.cli import main
from adri_pipeline_tests.conftest import PILOT, SAMPLE, table_rows

QUERIES = Path(__file__).resolve().parents[1] / "docs" / "queries.sql"


@pytest.fixture(scope="module")
def edited_once(tmp_path_factory):
    """The sample classified (embedded), then again after a label-only codebook edit: two codebook
    versions with results, as an analyst's afternoon leaves them."""
    folder = tmp_path_factory.mktemp("sql")
    warehouse, codebook = folder / "adri.duckdb", folder / "pilot.yaml"
    codebook.write_text(PILOT.read_text(encoding="utf-8"), encoding="utf-8")
    common = [
        "--corpus",
        str(SAMPLE),
        "--codebook",
        str(codebook),
        "--backend",
        "embedded",
        "--warehouse",
        str(warehouse),
        "--limit",
        "12",
    ]
    assert main(["classify", *common]) == 0
    codebook.write_text(
        codebook.read_text(encoding="utf-8").replace("qualitativa: Qualitativa", "qualitativa: Pesquisa qualitativa")
    )
    assert main(["classify", *common]) == 0
    return warehouse


def test_the_saved_questions_run_on_the_snapshot_and_answer(edited_once, capsys):
    assert main(["sql", "--warehouse", str(edited_once), "--file", str(QUERIES)]) == 0
    out = capsys.readouterr().out
    assert "share_of_year" in out and "problem" in out and "literal_share" in out and "documents_naming_it" in out
    assert "label changed" in out  # question 3: the label edit, previous vs current, without a model call


def test_codebook_changes_says_a_label_edit_changed_labels_only(edited_once):
    with duckdb.connect(str(edited_once.with_name("adri_snapshot.duckdb")), read_only=True) as con:
        changes = dict(
            con.execute(
                "SELECT change, count(*) FROM codebook_changes WHERE variable = 'abordagem' GROUP BY ALL"
            ).fetchall()
        )
        relabelled = con.execute(
            "SELECT DISTINCT previous_label, current_label FROM codebook_changes WHERE change = 'label changed'"
        ).fetchall()
    assert set(changes) <= {"label changed", "same"} and changes.get("label changed", 0) >= 1
    assert relabelled == [("Qualitativa", "Pesquisa qualitativa")]


def test_after_two_classify_runs_the_snapshot_describes_every_table_and_column(edited_once):
    """results_wide was recreated by each run's results refresh: its comments were set again with it."""
    from adri_pipeline.warehouse import Warehouse
    from adri_pipeline.warehouse.catalog import snapshot_description, uncommented

    described = snapshot_description(Warehouse(edited_once))
    assert uncommented(described) == []
    [wide] = [r for r in described if r.name == "results_wide"]
    assert "Definition: Abordagem metodológica" in {c.name: c.comment for c in wide.columns}["abordagem"]


def test_sql_errors_are_said_and_counted_without_a_traceback(edited_once, capsys):
    code = main(["sql", "--warehouse", str(edited_once), "-c", "SELECT nope FROM documents; SELECT 41 + 1 AS x;"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out.startswith("error: ") and "42" in captured.out and "Traceback" not in captured.out


def test_sql_opens_the_snapshot_read_only_never_the_writer(edited_once, capsys):
    assert main(["sql", "--warehouse", str(edited_once), "-c", "CREATE TABLE t (x INT);"]) == 1
    assert "read-only" in capsys.readouterr().out
    assert main(["sql", "--warehouse", str(edited_once.parent / "none.duckdb"), "-c", "SELECT 1;"]) == 2
    assert "no analyst snapshot yet" in capsys.readouterr().err
    assert main(["sql", "--version"]) == 0
    assert capsys.readouterr().out.strip() == f"DuckDB {duckdb.__version__}"


def test_code_draw_republishes_the_snapshot(edited_once, tmp_path, capsys):
    """Failed before: the draw was in the warehouse, not in the snapshot analysts query."""
    warehouse = tmp_path / "adri.duckdb"
    for suffix in ("", "_snapshot"):
        name = f"adri{suffix}.duckdb"
        (tmp_path / name).write_bytes((edited_once.parent / name).read_bytes())
    holdout = tmp_path / "holdout.txt"
    holdout.write_text("# none reserved\n")
    assert (
        main(
            [
                "code",
                "draw",
                "--round",
                "random-1",
                "--random",
                "5",
                "--seed",
                "1",
                "--warehouse",
                str(warehouse),
                "--corpus",
                str(SAMPLE),
                "--codebook",
                str(PILOT),
                "--holdout",
                str(holdout),
            ]
        )
        == 0
    )
    counts = table_rows(warehouse)
    assert counts["coding_samples"] == 5
    assert table_rows(warehouse.with_name("adri_snapshot.duckdb")) == counts
