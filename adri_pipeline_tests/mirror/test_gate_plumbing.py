"""The gate's plumbing on its own: a work queue never makes its caller wait, a lane bounds the calls a
mirror holds, a quota bounds the calls per point and minute."""

import threading

from adri_pipeline.mirror.gate_plumbing import Lane, Quotas, WorkQueue


def test_a_full_work_queue_refuses_at_once_and_a_fault_in_one_item_spares_the_next(caplog):
    release, handled = threading.Event(), []

    def handle(item):
        release.wait(5)
        if item == "broken":
            raise ValueError(item)
        handled.append(item)

    work = WorkQueue(handle, size=1, threads=1, lost="item lost")
    assert work.offer("first")  # taken by the thread, which waits for `release`
    while work._queue.qsize():
        pass
    assert work.offer("broken")  # the queue's one place
    assert not work.offer("third")  # full: refused, never waited for
    release.set()
    work.put("last")
    work.close()
    assert handled == ["first", "last"] and not work.busy
    assert "item lost" in caplog.text


def test_a_lane_holds_at_most_its_workers_calls_until_they_return():
    release = threading.Event()
    lane = Lane(1, "test-lane")
    held = lane.submit(lambda request: release.wait(5) and request, "a")
    assert held is not None and lane.submit(str, "b") is None  # the one worker is held: busy
    release.set()
    assert held.result(timeout=5) == "a"
    while (future := lane.submit(str, "c")) is None:  # the worker is handed back once its call returned
        pass
    assert future.result(timeout=5) == "c"
    lane.close()


def test_a_quota_counts_each_points_calls_apart_and_a_reload_adds_points():
    quotas = Quotas(["p"])
    assert [quotas.take("p", 2) for _ in range(3)] == [True, True, False]
    quotas.add(["p", "q"])  # a point already counted keeps its calls
    assert not quotas.take("p", 2) and quotas.take("q", 2)
