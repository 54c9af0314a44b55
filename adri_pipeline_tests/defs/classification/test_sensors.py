import json

import dagster as dg
import pytest

from adri_pipeline.classification.backends.embedded import EmbeddedBackend
from adri_pipeline.classification.codebook import load_codebook
from adri_pipeline.classification.shards import SHARDS, shard_of, shards_of
from adri_pipeline.definitions import defs
from adri_pipeline.defs.classification.sensors import codebook_change_sensor, new_documents_sensor
from adri_pipeline.defs.resources import AdriSettings
from adri_pipeline.in_process import materialize_graph, register_documents, resources_for
from adri_pipeline_tests.conftest import SAMPLE


def evaluate(sensor, instance, adri, cursor=None):
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources_for(adri)) as context:
        return sensor(context)


def test_a_changed_corpus_asks_for_registration_then_one_run_over_every_registered_shard(
    dagster_instance, adri, tmp_path
):
    """new_documents_sensor reads the file's hash only (never the warehouse); the corpus asset registers
    the shards; shard_runs_sensor asks for one run over every registered shard: a new document may
    land in a shard already registered, and the ledger skips whatever is classified."""
    from adri_pipeline.defs.classification.sensors import shard_runs_sensor

    corpus = tmp_path / "corpus.jsonl"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    corpus.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    adri = AdriSettings(
        warehouse=str(tmp_path / "never" / "w.duckdb"), codebook=adri.codebook, corpus=str(corpus), backend="embedded"
    )

    result = evaluate(new_documents_sensor, dagster_instance, adri)
    [request] = result.run_requests
    assert request.job_name == "register_corpus_job" and not (tmp_path / "never").exists()
    assert isinstance(evaluate(new_documents_sensor, dagster_instance, adri, result.cursor), dg.SkipReason)
    corpus.write_text("\n".join(lines[:13]) + "\n", encoding="utf-8")  # three new documents
    assert evaluate(new_documents_sensor, dagster_instance, adri, result.cursor).run_requests

    registered = shards_of(f"sample-{i:03d}" for i in range(1, 14))
    dagster_instance.add_dynamic_partitions("document_shards", registered)  # what the corpus asset does
    with dg.build_run_status_sensor_context(
        sensor_name="shard_runs_sensor",
        dagster_instance=dagster_instance,
        dagster_run=dg.DagsterRun(job_name="register_corpus_job", run_id="registered"),
        dagster_event=dg.DagsterEvent(event_type_value="PIPELINE_SUCCESS", job_name="register_corpus_job"),
        resources=resources_for(adri),
    ) as context:
        one = shard_runs_sensor(context)
    assert one.job_name == "classify_shards_job"
    assert (one.tags["dagster/asset_partition_range_start"], one.tags["dagster/asset_partition_range_end"]) == (
        registered[0],
        registered[-1],
    )


def test_a_document_always_falls_in_the_same_shard_of_a_bounded_few():
    ids = [f"doc-{i}" for i in range(5000)]
    assert [shard_of(i) for i in ids] == [shard_of(i) for i in ids]
    assert len(set(map(shard_of, ids))) == SHARDS
    assert shard_of("sample-001") == "shard-070"  # pinned: another function would move every document's shard


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_codebook_edits_reclassify_only_when_the_signature_changes(dagster_instance, adri, codebook_copy):
    register_documents(dagster_instance, adri.settings())  # the sensor reads the registered partitions, nothing more
    first = evaluate(codebook_change_sensor, dagster_instance, adri)
    assert first.run_requests == [] and json.loads(first.cursor)["signature"]

    _edit(codebook_copy, "qualitativa: Qualitativa", "qualitativa: Pesquisa qualitativa")
    labels = evaluate(codebook_change_sensor, dagster_instance, adri, first.cursor)
    assert [r.job_name for r in labels.run_requests] == ["refresh_results_job"]

    _edit(codebook_copy, "Recorte geográfico do objeto estudado.", "Escala geográfica do objeto.")
    definition = evaluate(codebook_change_sensor, dagster_instance, adri, labels.cursor)
    [request] = definition.run_requests
    assert request.job_name == "classify_documents_job"
    shards = dagster_instance.get_dynamic_partitions("document_shards")
    assert shards == shards_of(f"sample-{i:03d}" for i in range(1, 24))  # 024 has no abstract
    assert request.tags["dagster/asset_partition_range_start"] == shards[0]
    assert request.tags["dagster/asset_partition_range_end"] == shards[-1]

    assert isinstance(evaluate(codebook_change_sensor, dagster_instance, adri, definition.cursor), dg.SkipReason)


def test_the_sensors_that_look_at_the_codebook_and_the_coders_file_observe_them(
    dagster_instance, adri, codebook_copy, tmp_path
):
    """Failed before: the `codebook` and `coder_file` sources were never observed; the sensors hashed the
    files for themselves and Dagster never knew a version of either."""
    from adri_pipeline.defs.classification.codebook import codebook, codebook_version
    from adri_pipeline.defs.classification.coders import coder_file, coder_file_version
    from adri_pipeline.defs.classification.sensors import new_codes_sensor

    first = evaluate(codebook_change_sensor, dagster_instance, adri)
    [seen] = first.asset_events
    assert seen.asset_key == codebook.key and seen.tags["dagster/data_version"] == codebook_version(adri.settings())
    _edit(codebook_copy, "qualitativa: Qualitativa", "qualitativa: Pesquisa qualitativa")
    [again] = evaluate(codebook_change_sensor, dagster_instance, adri, first.cursor).asset_events
    assert again.tags["dagster/data_version"] == codebook_version(adri.settings()) != seen.tags["dagster/data_version"]

    coders = tmp_path / "coders.csv"
    coders.write_text("doc_id,variable,value,evidencia,note\n", encoding="utf-8")
    with_codes = AdriSettings(
        **{**{k: getattr(adri, k) for k in ("warehouse", "corpus", "codebook", "backend")}, "coders": str(coders)}
    )
    [coded] = evaluate(new_codes_sensor, dagster_instance, with_codes).asset_events
    assert coded.asset_key == coder_file.key and coded.tags["dagster/data_version"] == coder_file_version(
        with_codes.settings()
    )


@pytest.mark.slow  # end to end, over 7 s: the slow suite (.ci/run runs it)
def test_label_only_edit_renames_results_without_a_model_call(dagster_instance, adri, codebook_copy, monkeypatch):
    materialize_graph(dagster_instance, adri, jobs=("classify",))  # answers in the ledger; the refresh is tested
    _edit(codebook_copy, "qualitativa: Qualitativa", "qualitativa: QUALI")

    def no_model_calls(*args, **kwargs):
        raise AssertionError("a label-only edit must not call the model")

    monkeypatch.setattr(EmbeddedBackend, "classify", no_model_calls)
    result = defs.resolve_job_def("refresh_results_job").execute_in_process(
        instance=dagster_instance, resources=resources_for(adri)
    )
    assert result.success
    labels = adri.warehouse_access().query(
        "SELECT DISTINCT label FROM classification_values "
        "WHERE variable = 'abordagem' AND value = 'qualitativa' AND codebook_hash = ?",
        [load_codebook(codebook_copy).content_hash],
    )
    assert labels["label"].to_list() == ["QUALI"]


def test_new_codes_refit_the_model(dagster_instance, adri, tmp_path):
    from adri_pipeline.defs.classification.sensors import new_codes_sensor

    codes = tmp_path / "codes.csv"
    codes.write_text("doc_id,variable,value\nsample-001,abordagem,qualitativa\n")
    with_codes = AdriSettings(
        warehouse=adri.warehouse, codebook=adri.codebook, corpus=adri.corpus, backend="embedded", coders=str(codes)
    )
    assert isinstance(evaluate(new_codes_sensor, dagster_instance, adri), dg.SkipReason)  # no coder file
    first = evaluate(new_codes_sensor, dagster_instance, with_codes)
    assert not first.run_requests  # the first look only records the file
    assert isinstance(evaluate(new_codes_sensor, dagster_instance, with_codes, first.cursor), dg.SkipReason)

    dagster_instance.add_dynamic_partitions("document_shards", shards_of(["sample-001", "sample-002"]))
    codes.write_text("doc_id,variable,value\nsample-001,abordagem,teorica\n")
    changed = evaluate(new_codes_sensor, dagster_instance, with_codes, first.cursor)
    # the refit only: the reclassification waits for the new fit (reclassify_after_refit_sensor)
    assert [r.run_key[:6] for r in changed.run_requests] == ["coded-"]


def test_a_new_fit_reclassifies_after_it_only_with_the_embedded_backend(dagster_instance, adri, tmp_path):
    """Failed before: new codes launched the refit and the reclassification together, in no order."""
    from adri_pipeline.defs.classification.sensors import reclassify_after_refit_sensor

    dagster_instance.add_dynamic_partitions("document_shards", shards_of(["sample-001", "sample-002"]))

    def fit(digest):
        dagster_instance.report_runless_asset_event(
            dg.AssetMaterialization("coded_model", tags={"dagster/data_version": digest})
        )

    with_ollama = AdriSettings(warehouse=adri.warehouse, codebook=adri.codebook, corpus=adri.corpus, backend="ollama")
    assert isinstance(evaluate(reclassify_after_refit_sensor, dagster_instance, adri), dg.SkipReason)  # no fit yet
    fit("a" * 64)
    first = evaluate(reclassify_after_refit_sensor, dagster_instance, adri)
    assert [r.tags["dagster/asset_partition_range_end"] for r in first.run_requests] == [
        shards_of(["sample-001", "sample-002"])[-1]
    ]
    assert isinstance(evaluate(reclassify_after_refit_sensor, dagster_instance, adri, first.cursor), dg.SkipReason)
    fit("b" * 64)
    served = evaluate(reclassify_after_refit_sensor, dagster_instance, with_ollama, first.cursor)
    assert not served.run_requests and served.cursor == "b" * 64  # Ollama's answers stand


def test_with_the_shared_ledger_a_new_corpus_asks_for_registration_and_never_opens_the_warehouse(
    dagster_instance, adri, tmp_path
):
    shared = AdriSettings(
        warehouse=str(tmp_path / "never" / "w.duckdb"),
        codebook=adri.codebook,
        corpus=str(SAMPLE),
        backend="embedded",
        ledger_url="postgresql://adri@127.0.0.1:9/adri",
    )
    result = evaluate(new_documents_sensor, dagster_instance, shared)
    [request] = result.run_requests
    assert request.job_name == "register_corpus_job" and not result.dynamic_partitions_requests
    assert not (tmp_path / "never").exists()


def test_a_range_is_cut_into_runs_of_the_shards_per_run_each_tagged_with_its_launch_and_model_server():
    from adri_pipeline.config import Settings
    from adri_pipeline.defs.classification.sensors import shard_run_requests

    keys = [f"shard-{i:03d}" for i in range(10)]
    settings = Settings.load(
        backend="ollama", ollama_hosts=["http://gpu1:11434*4", "http://gpu2:11434"], shards_per_run=4
    )
    requests = shard_run_requests(keys, settings, batch="b1")
    assert [
        (r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"]) for r in requests
    ] == [("shard-000", "shard-003"), ("shard-004", "shard-007"), ("shard-008", "shard-009")]
    assert {r.tags["adri/batch"] for r in requests} == {"b1"} and len({r.run_key for r in requests}) == 3
    assert requests[0].tags["adri/model_server"] == "ollama http://gpu1:11434,http://gpu2:11434"
    assert {r.job_name for r in requests} == {"classify_shards_job"}


def test_a_launch_is_pending_while_a_run_is_queued_or_a_failed_one_awaits_its_retry():
    from types import SimpleNamespace

    from adri_pipeline.defs.classification.sensors import batch_pending

    def run(status, **tags):  # what the sensor reads of a run record's run
        return SimpleNamespace(status=status, tags=tags)

    done, failed = run(dg.DagsterRunStatus.SUCCESS), run(dg.DagsterRunStatus.FAILURE, **{"dagster/will_retry": "false"})
    assert not batch_pending([done, failed])
    assert batch_pending([done, run(dg.DagsterRunStatus.QUEUED)])
    assert batch_pending([done, run(dg.DagsterRunStatus.FAILURE, **{"dagster/will_retry": "true"})])
    retried = run(dg.DagsterRunStatus.FAILURE, **{"dagster/will_retry": "true", "dagster/auto_retry_run_id": "r2"})
    assert not batch_pending([done, retried])  # its retry is a run of the launch of its own


def test_results_are_asked_once_a_launch_ends_and_the_cursor_keeps_the_oldest_pending_launch():
    """Issue 58, item 2: the sensor read the last 2,000 runs of the job every 5 s; it now reads from the
    creation of the oldest launch still pending (or the newest run it read), and asks for a launch's
    results when all of its runs ended."""
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from adri_pipeline.defs.classification.sensors import results_requests

    def record(batch, status, at):
        run = SimpleNamespace(status=status, tags={"adri/batch": batch})
        return SimpleNamespace(dagster_run=run, create_timestamp=datetime.fromtimestamp(at, timezone.utc))

    done, running = dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.STARTED
    requests, cursor = results_requests(
        [
            record("a", done, 10),
            record("a", done, 11),
            record("b", running, 12),
            record("b", done, 13),
            record("c", done, 14),
        ]
    )
    assert [r.run_key for r in requests] == ["results-a", "results-c"] and cursor == 12  # b's oldest run
    requests, cursor = results_requests([record("b", done, 12), record("b", done, 13), record("c", done, 14)])
    assert [r.run_key for r in requests] == ["results-b", "results-c"] and cursor == 14  # c again: its key dedupes
    assert results_requests([]) == ([], None)
