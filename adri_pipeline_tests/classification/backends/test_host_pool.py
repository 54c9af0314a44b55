"""The host pool on its own, over servers written for the test: a host taken out holds its slots back
until a probe finds the same weights, and every host out past its budget gives up."""

import threading

import pytest

from adri_pipeline.classification.backends.base import BackendError
from adri_pipeline.classification.backends.host_pool import HostPool
from adri_pipeline.models.base import ModelInfo, ServerUnreachable


class Host:
    """A server that answers model_info with `digest`, or refuses while `down` is set."""

    def __init__(self, host: str, digest: str = "sha256:aa"):
        self.host, self.digest, self.down = host, digest, threading.Event()

    def model_info(self, name: str) -> ModelInfo:
        if self.down.is_set():
            raise ServerUnreachable(f"{self.host} refused")
        return ModelInfo(name, self.digest)


def pool(*hosts: Host, slots: int = 1, retries: int = 0) -> HostPool:
    made = HostPool(list(hosts), [slots] * len(hosts), "Test server", "m", backoff_s=0.01, reconnect_retries=retries)
    made.digest = "sha256:aa"
    return made


def test_a_host_taken_out_holds_its_slots_back_and_rejoins_when_a_probe_finds_the_same_weights():
    a, b = Host("a"), Host("b")
    hosts = pool(a, b, retries=5)
    a.down.set()
    hosts.take_out(0, ServerUnreachable("dropped"))
    assert hosts.slot() == 1 and hosts.out == {0}  # b's slot; a's token is held back
    a.down.clear()
    while hosts.out:  # the next probe finds it answering
        threading.Event().wait(0.01)
    hosts.put_back(1)
    assert {hosts.slot(), hosts.slot()} == {0, 1}
    hosts.close()


def test_every_host_out_past_its_budget_gives_up_with_the_error_that_took_it_out():
    a = Host("a")
    a.down.set()
    hosts = pool(a)
    hosts.take_out(0, ServerUnreachable("connection reset"))
    with pytest.raises(BackendError, match="went away during the run.*connection reset"):
        hosts.slot()
    hosts.close()


def test_only_an_answer_sent_after_the_latest_take_out_clears_a_hosts_failures():
    a = Host("a")
    hosts = pool(a, retries=5)
    before = hosts.sent(0)
    hosts.take_out(0, ServerUnreachable("dropped"))
    hosts.answered(0, before)  # sent before the take-out: says nothing of the host now
    assert hosts.failures[0] == 1  # a probe that finds it answering lets it rejoin, and keeps the count
    while hosts.out:
        threading.Event().wait(0.01)
    hosts.answered(0, hosts.sent(0))
    assert 0 not in hosts.failures
    hosts.close()
