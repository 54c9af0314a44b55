"""Outputs never replace what they should not, are written whole or not at all, and a name that
becomes a file stays inside its folder (adri_pipeline/paths.py)."""

from __future__ import annotations

import duckdb
import pytest

from adri_pipeline.cli import main
from adri_pipeline.config import Settings
from adri_pipeline.paths import PathRefused, check, check_output, file_name, replacing, write_text
from adri_pipeline_tests.conftest import PILOT, SAMPLE


def test_a_failed_write_leaves_the_earlier_file_whole_and_no_temporary(tmp_path):
    path = write_text(tmp_path / "out.csv", "earlier\n")
    with pytest.raises(OSError, match="disk full"), replacing(path) as written:
        written.write_text("half")
        raise OSError("disk full")
    assert path.read_text() == "earlier\n" and list(tmp_path.iterdir()) == [path]
    with replacing(path) as written:
        written.write_text("new\n")
    assert path.read_text() == "new\n" and list(tmp_path.iterdir()) == [path]
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert path.stat().st_mode == plain.stat().st_mode  # the user's umask, not a temporary file's 0600


def test_an_existing_output_needs_overwrite(tmp_path):
    settings = Settings(warehouse=tmp_path / "w.duckdb")
    existing = write_text(tmp_path / "out.csv", "kept\n")
    with pytest.raises(PathRefused, match=r"^--output .*out.csv: the file exists; give --overwrite \(--sobrescrever\)"):
        check_output("--output", existing, settings, overwrite=False)
    assert check_output("--output", existing, settings, overwrite=True) == existing


@pytest.mark.parametrize(
    "which,what",
    [
        ("warehouse", "the warehouse"),
        ("snapshot", "the warehouse's snapshot"),
        ("corpus", "inside the corpus folder"),
        ("codebook", "the codebook"),
        ("coders' corpus", "the coders' corpus"),
        ("coders", "the coders' file"),
        ("inside corpus", "inside the corpus folder"),
        ("other warehouse", "a DuckDB database"),
    ],
)
def test_what_the_project_reads_is_never_an_output_even_with_overwrite(tmp_path, which, what):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.jsonl").write_text('{"doc_id": "1"}\n')
    for name in ("w.duckdb", "other.duckdb"):
        duckdb.connect(str(tmp_path / name)).close()
    (tmp_path / "w_snapshot.duckdb").write_bytes((tmp_path / "w.duckdb").read_bytes())
    coders = write_text(tmp_path / "coders.csv", "doc_id,variable,value\n")
    codebook = write_text(tmp_path / "codebook.yaml", PILOT.read_text(encoding="utf-8"))
    coded = write_text(tmp_path / "coded.jsonl", '{"doc_id": "2"}\n')
    settings = Settings(
        warehouse=tmp_path / "w.duckdb", corpus=corpus, codebook=codebook, coders=coders, coders_corpus=coded
    )
    target = {
        "warehouse": tmp_path / "w.duckdb",
        "snapshot": tmp_path / "w_snapshot.duckdb",
        "corpus": corpus / "a.jsonl",
        "codebook": codebook,
        "coders": coders,
        "inside corpus": corpus / "new.csv",
        "other warehouse": tmp_path / "other.duckdb",
        "coders' corpus": coded,
    }[which]
    before = target.read_bytes() if target.exists() else None
    with pytest.raises(PathRefused, match=f"that is {what}.*never replaced by an output"):
        check_output("--labels", target, settings, overwrite=True)
    assert (target.read_bytes() if target.exists() else None) == before


def test_the_cli_refuses_to_export_over_the_warehouse_or_the_coders_file(tmp_path, capsys, stop_handlers):
    """Failed before: `adri export --output <warehouse>` replaced the warehouse with a CSV, exit 0."""
    warehouse = tmp_path / "w.duckdb"
    duckdb.connect(str(warehouse)).close()
    coders = write_text(tmp_path / "coders.csv", "doc_id,variable,value,evidencia\n")
    before = warehouse.read_bytes(), coders.read_bytes()
    for argv, what in (
        (["export", "--format", "csv", "--output", str(warehouse), "--overwrite"], "the warehouse"),
        (["findings", "--labels", str(coders), "--coders", str(coders), "--sobrescrever"], "the coders' file"),
        (["findings", "--labels", str(coders), "--codebook", str(PILOT)], "a file that exists"),
    ):
        assert main([*argv, "--warehouse", str(warehouse)]) == 2
        err = capsys.readouterr().err.strip()
        what = "the file exists" if what == "a file that exists" else f"that is {what}"
        assert err.startswith("error: --") and what in err and "\n" not in err, err
    assert (warehouse.read_bytes(), coders.read_bytes()) == before


@pytest.mark.parametrize("name", ["../../evil", "/tmp/evil", "a/b", "..", "", "a\\b"])
def test_a_round_name_is_a_name_not_a_path(name):
    with pytest.raises(PathRefused, match="a name, not a path"):
        file_name(name, "--round")


@pytest.mark.parametrize("name", ["../../evil", "ABSOLUTE"])
def test_code_draw_writes_nothing_outside_the_warehouse_folder(tmp_path, capsys, name, stop_handlers):
    """Failed before: `adri code draw --round ../../evil` wrote ../../evil.ids (and recorded the draw)."""
    name = str(tmp_path / "elsewhere" / "evil") if name == "ABSOLUTE" else name
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    code = main(
        [
            "code",
            "draw",
            "--round",
            name,
            "--random",
            "2",
            "--warehouse",
            str(folder / "w.duckdb"),
            "--corpus",
            str(SAMPLE),
        ]
    )
    assert code == 2
    assert "error: --round" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b"]


def test_each_kind_says_what_is_wrong_in_one_line(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    cases = [
        ("file", tmp_path / "missing.txt", "no such file"),
        ("file", tmp_path, "is a folder, not a file"),
        ("file", tmp_path / "file.txt" / "x", "is not a folder"),
        ("output", tmp_path / "no" / "out.csv", "does not exist"),
        ("output", tmp_path / "file.txt" / "out.csv", "is a file, not a folder"),
        ("store", tmp_path, "is a folder, not a file"),
    ]
    for kind, path, why in cases:
        with pytest.raises(PathRefused) as refused:
            check(kind, "--flag", path)
        assert str(refused.value).startswith(f"--flag {path}: ") and why in str(refused.value)
    check("file-or-folder", "--corpus", tmp_path)
    check("store", "--warehouse", tmp_path / "new" / "w.duckdb")  # a command creates it


def test_code_draw_writes_its_ids_file_and_replaces_a_named_one_only_when_asked(tmp_path, capsys, stop_handlers):
    warehouse = tmp_path / "wh" / "w.duckdb"
    assert (
        main(
            [
                "classify",
                "--corpus",
                str(SAMPLE),
                "--backend",
                "embedded",
                "--limit",
                "6",
                "--warehouse",
                str(warehouse),
            ]
        )
        == 0
    )
    draw = [
        "code",
        "draw",
        "--round",
        "r1",
        "--random",
        "2",
        "--warehouse",
        str(warehouse),
        "--holdout",
        str(write_text(tmp_path / "holdout.txt", "# none\n")),
    ]
    assert main(draw) == 0
    ids = (tmp_path / "wh" / "coding" / "r1.ids").read_text().split()
    assert len(ids) == 2
    named = write_text(tmp_path / "mine.ids", "kept\n")
    capsys.readouterr()
    assert main([*draw, "--out", str(named)]) == 2
    assert "--out " + str(named) + ": the file exists" in capsys.readouterr().err and named.read_text() == "kept\n"
    assert main([*draw, "--out", str(named), "--sobrescrever"]) == 0
    assert named.read_text().split() == ids  # the round's recorded draw
