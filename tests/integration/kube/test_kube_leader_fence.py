"""The leader elector moves the fence: open on acquiring, shut on losing, even when a renewal hangs.

Against the embedded cluster, whose partitions cut the elector's client off by User-Agent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ksched.kube import ApiClient, ClientSettings, IOThread, load_connection
from ksched.kube.fence import DEPOSED, LEADING, STANDBY, Fence
from ksched.scheduler.leader import LeaderElectionSettings, LeaderElector
from ksched.sim import PartitionRule, SimCluster

SETTINGS = dict(lease_duration_s=2.0, renew_deadline_s=1.0, retry_period_s=0.2)


class Elector:
    """One elector on the test's I/O thread, with its fence and what its callbacks saw."""

    def __init__(self, io: IOThread, kubeconfig: Path, identity: str) -> None:
        self.fence = Fence(leader_election=True, lease="kube-system/kube-scheduler")
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stopped_with: tuple[str, bool] | None = None
        client: ApiClient = io.client(
            load_connection(str(kubeconfig)),
            settings=ClientSettings(request_timeout_s=30.0),
            gate=self.fence.lease_writes,
            user_agent=f"test ({identity}) leader-election",
        )
        self.elector = LeaderElector(
            client,
            LeaderElectionSettings(identity=identity, **SETTINGS),
            fence=self.fence,
            on_started=self.started.set,
            on_stopped=self._on_stopped,
        )
        self.task = io.submit(self.elector.run())

    def _on_stopped(self) -> None:
        # what the runner's callback would see: the fence is already shut when it runs
        self.stopped_with = (self.fence.state, self.fence.writes.allows())
        self.stopped.set()


@pytest.fixture
def elect(io: IOThread, kubeconfig: Path) -> Iterator[Callable[[str], Elector]]:
    made: list[Elector] = []

    def make(identity: str) -> Elector:
        e = Elector(io, kubeconfig, identity)
        made.append(e)
        return e

    yield make
    for e in made:
        io.call_soon(e.elector.stop)
        e.task.result(10)


def test_acquiring_opens_the_fence(elect: Callable[[str], Elector]) -> None:
    a = elect("a")
    assert a.fence.state == STANDBY and not a.fence.writes.allows()
    assert a.started.wait(10)
    assert a.fence.state == LEADING and a.fence.writes.allows()
    time.sleep(1.5)  # renewals keep it open past the first deadline
    assert a.fence.writes.allows()


@pytest.mark.parametrize("mode", ["blackhole", "refuse"])
def test_a_renewal_that_hangs_shuts_the_fence_at_the_deadline(
    sim: SimCluster, elect: Callable[[str], Elector], mode: str
) -> None:
    a = elect("a")
    assert a.started.wait(10)
    sim.faults.set_partitions((PartitionRule(user_agent="(a)", mode=mode),))
    t0 = time.monotonic()
    assert a.stopped.wait(5)
    took = time.monotonic() - t0
    assert a.stopped_with == (DEPOSED, False)  # shut before anyone was told
    assert took <= SETTINGS["renew_deadline_s"] + 0.3, f"deposed {took:.2f}s after the partition"
    a.task.result(5)  # the elector is done, though its request is still held
    sim.faults.set_partitions(())
    assert not a.fence.writes.allows() and not a.fence.lease_writes.allows()


def test_a_standby_takes_over_after_the_lease_expires_and_the_old_leader_stays_deposed(
    sim: SimCluster, elect: Callable[[str], Elector]
) -> None:
    a = elect("a")
    assert a.started.wait(10)
    b = elect("b")
    time.sleep(0.5)
    assert b.fence.state == STANDBY
    sim.faults.set_partitions((PartitionRule(user_agent="(a)", mode="blackhole"),))
    assert a.stopped.wait(5)
    assert b.started.wait(5)
    sim.faults.set_partitions(())
    holder = (sim.store.get("leases", "kube-scheduler", "kube-system") or {})["spec"]["holderIdentity"]
    assert holder == "b" and a.fence.state == DEPOSED and b.fence.writes.allows()


def test_a_leader_that_reads_another_holder_stops_at_once(
    sim: SimCluster, elect: Callable[[str], Elector]
) -> None:
    a = elect("a")
    assert a.started.wait(10)
    lease = sim.store.get("leases", "kube-scheduler", "kube-system")
    assert lease is not None
    lease["spec"]["holderIdentity"] = "intruder"
    sim.store.update("leases", lease, namespace="kube-system")
    assert a.stopped.wait(2)  # one retryPeriod, not renewDeadline
    assert a.fence.state == DEPOSED and "intruder" in a.fence.reason


def test_releasing_stops_every_write_then_hands_the_lease_back(
    sim: SimCluster, io: IOThread, elect: Callable[[str], Elector]
) -> None:
    a = elect("a")
    assert a.started.wait(10)
    io.run(a.elector.release(), timeout=5)
    assert a.fence.state == DEPOSED and not a.fence.lease_writes.allows()
    lease = sim.store.get("leases", "kube-scheduler", "kube-system") or {}
    assert lease["spec"]["holderIdentity"] == ""
    assert not a.stopped.is_set()  # a clean stop is not a loss
