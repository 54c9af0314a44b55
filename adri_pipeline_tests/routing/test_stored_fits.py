"""`adri routing serve` and `calibrate --team` keep their fit: a restart with the same data and code
serves it without fitting again; anything it was made from changed, it fits anew."""

from __future__ import annotations

import pickle

from adri_pipeline.config import Settings
from adri_pipeline.jev.serialize import to_request
from adri_pipeline.routing import service
from adri_pipeline.routing.calibration import Calibrated
from adri_pipeline.routing.candidates import kind_of, make_candidate
from adri_pipeline.routing.stored_fits import FitStore, fit_key


def _settings(tmp_path, **overrides) -> Settings:
    return Settings.load(
        **{
            "warehouse": str(tmp_path / "w.duckdb"),
            "routing_extra_training": "none",
            "fit_cache": str(tmp_path / "fits"),
        }
        | overrides
    )


def _fit(settings: Settings, candidate: str = "static-logreg"):
    config = service.config_for(settings, runs=0)
    dataset = service.build_examples(settings, config)
    return service.served_fit(settings, candidate, dataset, config), dataset


def test_fit_key_changes_with_an_example_the_configuration_or_the_candidate_and_with_nothing_else(tmp_path):
    settings = _settings(tmp_path)
    config = service.config_for(settings, runs=0)
    dataset = service.build_examples(settings, config)
    kind = kind_of("static-logreg").describe()
    key = fit_key("static-logreg", kind, config, dataset, {})
    assert fit_key("static-logreg", kind, config, service.build_examples(settings, config), {}) == key

    first = dataset.examples[0]
    edited = [first.model_copy(update={"utterance": first.utterance + "!"}), *dataset.examples[1:]]
    changed = type(dataset)(edited, dataset.split_of, dataset.test_hash)
    assert fit_key("static-logreg", kind, config, changed, {}) != key
    wider = service.config_for(_settings(tmp_path), runs=0)
    wider.set_coverage = 0.8
    assert fit_key("static-logreg", kind, wider, dataset, {}) != key
    assert fit_key("embedded-logreg", kind, config, dataset, {}) != key
    assert fit_key("static-logreg", kind, config, dataset, {"sgd": dataset.examples[:3]}) != key


def test_a_restart_loads_the_stored_fit_and_answers_as_the_fit_did(tmp_path, capsys):
    """Failed before: every `serve` and `calibrate --team` fitted the candidate again (6 minutes for
    embedded-logreg on the sample with the team's turns)."""
    settings = _settings(tmp_path)
    (fitted, quantiles), dataset = _fit(settings)
    assert "fit stored at" in capsys.readouterr().err
    [path] = FitStore(tmp_path / "fits").stored("static-logreg")

    (loaded, loaded_quantiles), _ = _fit(settings)
    said = capsys.readouterr().err
    assert "loaded the fit stored" in said and "fitting on" not in said
    assert loaded is not fitted and loaded_quantiles == quantiles and set(quantiles) >= {"D1", "D2"}
    for example in dataset.in_split("test")[:20]:
        request = to_request(example)
        assert loaded.respond(request, example.task)[0] == fitted.respond(request, example.task)[0]

    path.write_bytes(b"not a pickle")
    (_, again), _ = _fit(settings)
    said = capsys.readouterr().err
    assert "cannot be read" in said and "fit stored at" in said and again == quantiles
    assert isinstance(pickle.loads(path.read_bytes()).calibrated, Calibrated)


def test_nothing_is_kept_when_the_cache_is_off(tmp_path, capsys):
    settings = _settings(tmp_path, fit_cache="")
    _fit(settings)
    _fit(settings)
    said = capsys.readouterr().err
    assert "stored" not in said and said.count("fitting on") == 2
    assert not (tmp_path / "fits").exists()


def test_the_store_keeps_the_newest_fits_of_each_candidate_and_reads_a_key_as_its_own(tmp_path):
    store = FitStore(tmp_path, keep=2)
    calibrated = Calibrated(make_candidate("static-logreg"))
    for key in ("a" * 64, "b" * 64, "c" * 64):
        store.save("static-logreg", key, calibrated, {"D1": 0.5})
    store.save("static-logreg@source-only", "d" * 64, calibrated, {})
    assert [p.name[-31:-7] for p in store.stored("static-logreg")] == ["c" * 24, "b" * 24]
    assert len(store.stored("static-logreg@source-only")) == 1
    assert store.load("static-logreg", "a" * 64) is None
    assert store.load("static-logreg", "b" * 64).set_quantiles == {"D1": 0.5}
    # a file under another key's name is not served
    store.path("static-logreg", "c" * 64).write_bytes(store.path("static-logreg", "b" * 64).read_bytes())
    assert store.load("static-logreg", "c" * 64) is None


def test_serve_loads_the_fit_a_teams_recalibration_stored(tmp_path, capsys):
    """The team's thresholds certify the model `serve` then answers with, not a refit of it."""
    from adri_pipeline.routing.protocol import TEAM_TRAINING

    settings = _settings(tmp_path)
    team = tmp_path / "team.jsonl"
    team.write_text(open(TEAM_TRAINING[0], encoding="utf-8").read(), encoding="utf-8")
    _, path = service.calibrate_for_team(settings, "static-logreg", team)
    assert "fit stored at" in capsys.readouterr().err
    service.serving(settings, "static-logreg", team_calibration=path)
    said = capsys.readouterr().err
    assert "loaded the fit stored" in said and "fitting on" not in said


def test_a_second_start_of_the_same_fit_waits_for_the_first_and_is_told(tmp_path, capsys):
    import threading

    store = FitStore(tmp_path)
    entered = threading.Event()

    def second_start():
        with store.fitting("static-logreg", "a" * 64):
            entered.set()

    with store.fitting("static-logreg", "a" * 64):
        waiting = threading.Thread(target=second_start)
        waiting.start()
        assert not entered.wait(1.0)  # held: the second start does not fit beside it
        with store.fitting("static-logreg", "b" * 64):  # another key is not held up
            pass
    waiting.join(30)
    assert entered.is_set() and "waiting for its fit" in capsys.readouterr().err
