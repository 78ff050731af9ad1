"""Fixtures for the scheduler process tests: a SimCluster, in-process schedulers, ``ksched run`` processes.

Every test checks that it leaves no thread behind; processes are killed and reaped, servers stopped.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sched_harness import SIM, InProcessScheduler, KschedProcess, write_config

from ksched.sim import FaultConfig, SimCluster, SimConfig


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5.0
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not extra, f"threads left running: {[t.name for t in extra]}"
    gc.collect()  # report an unclosed socket or transport in the test that leaked it


@pytest.fixture
def make_sim() -> Iterator[Callable[..., SimCluster]]:
    """``make_sim(config=SIM, faults=None)``: a started SimCluster, stopped after the test."""
    started: list[SimCluster] = []

    def make(config: SimConfig = SIM, faults: FaultConfig | None = None) -> SimCluster:
        cluster = SimCluster(config, faults=faults)
        cluster.start()
        started.append(cluster)
        return cluster

    yield make
    for cluster in reversed(started):
        cluster.stop()


@pytest.fixture
def sim(make_sim: Callable[..., SimCluster]) -> SimCluster:
    return make_sim()


@pytest.fixture
def fast_config(tmp_path: Path) -> Path:
    """No leader election, qps/burst 5000."""
    return write_config(tmp_path / "ksched.yaml", leader_elect=False)


@pytest.fixture
def start_scheduler(kubeconfig: Path, fast_config: Path) -> Iterator[Callable[..., InProcessScheduler]]:
    """``start_scheduler()``: an in-process scheduler against ``sim``, stopped (threads joined) afterwards."""
    running: list[InProcessScheduler] = []

    def start(config: Path | None = None, **kw: Any) -> InProcessScheduler:
        sched = InProcessScheduler(kubeconfig, config or fast_config, **kw)
        running.append(sched)
        return sched.start()

    yield start
    errors = []
    for sched in reversed(running):
        try:
            sched.stop()
        except AssertionError as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


@pytest.fixture
def start_process(tmp_path: Path) -> Iterator[Callable[..., KschedProcess]]:
    """``start_process(name, kubeconfig, config, leader_elect=...)``: killed and reaped after the test."""
    procs: list[KschedProcess] = []

    def start(name: str, kubeconfig: Path, config: Path, *, leader_elect: bool) -> KschedProcess:
        proc = KschedProcess(name, kubeconfig, config, tmp_path, leader_elect=leader_elect)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.close()
