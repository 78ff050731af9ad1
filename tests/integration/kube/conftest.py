"""Fixtures for ksched.kube against a real SimCluster over HTTP: the cluster, an I/O thread, a client.

Every test checks that it leaves no thread behind (the I/O thread, executor threads for credential
refreshes, the sim's server thread): the scheduler relies on ``IOThread.stop()`` being complete.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.kube import ApiClient, ClientSettings, IOThread, RetrySettings, load_connection
from ksched.kube.ratelimit import BackoffSettings
from ksched.sim import SimConfig
from tests.integration.conftest import SMALL as SHARED_SMALL

SMALL = dataclasses.replace(SHARED_SMALL, kubelet=False)
"""The shared small cluster without the kubelet stand-in: these tests watch pods change only
when they change them."""
FAST_RETRY = RetrySettings(max_retries=4, backoff=BackoffSettings(initial_s=0.01, max_s=0.05))
"""Client retries quick enough for tests (Retry-After from the server is still honoured)."""


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2.0
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not extra, f"threads left running: {[t.name for t in extra]}"


@pytest.fixture
def sim_config() -> SimConfig:
    return SMALL


@pytest.fixture
def io() -> Iterator[IOThread]:
    thread = IOThread(name="ksched-io-test").start()
    try:
        yield thread
    finally:
        thread.stop()


@pytest.fixture
def make_client(io: IOThread, kubeconfig: Path) -> Callable[..., ApiClient]:
    """``make_client(qps=..., burst=..., retry=RetrySettings(...))``: a client closed by ``io.stop()``."""

    def make(*, qps: float = 0.0, burst: int = 1, retry: RetrySettings = FAST_RETRY, **kw: Any) -> ApiClient:
        settings = ClientSettings(qps=qps, burst=burst, retry=retry, request_timeout_s=5.0, **kw)
        return io.client(load_connection(str(kubeconfig)), settings=settings)

    return make


@pytest.fixture
def client(make_client: Callable[..., ApiClient]) -> ApiClient:
    return make_client()


class Recorder:
    """A sink that records events (called on the I/O thread) and lets the test wait for them."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._cond = threading.Condition()

    def __call__(self, event: Any) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def snapshot(self) -> list[Any]:
        with self._cond:
            return list(self.events)

    def wait_for(self, predicate: Callable[[list[Any]], bool], timeout: float = 5.0) -> list[Any]:
        with self._cond:
            ok = self._cond.wait_for(lambda: predicate(self.events), timeout)
            events = list(self.events)
        assert ok, f"timed out; events so far: {events!r:.2000}"
        return events


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
