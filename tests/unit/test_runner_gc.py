"""The scheduler process's collector policy (``runner._tune_gc``), applied once the caches sync."""

from __future__ import annotations

import gc
from collections.abc import Coroutine, Iterator
from typing import Any

import pytest

from ksched import runner


class FakeIO:
    """Records what would run on the I/O loop instead of running it."""

    def __init__(self) -> None:
        self.submitted: list[Coroutine[Any, Any, Any]] = []

    def submit(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.submitted.append(coro)


@pytest.fixture
def io() -> Iterator[FakeIO]:
    """A FakeIO; afterwards the collector is as it was (on, unfrozen, its thresholds) and what was
    submitted is closed unrun."""
    old = gc.get_threshold()
    fake = FakeIO()
    try:
        yield fake
    finally:
        gc.enable()
        for coro in fake.submitted:
            coro.close()
        gc.unfreeze()
        gc.set_threshold(*old)


def test_tune_gc_freezes_the_synced_heap_and_schedules_full_collections(io: FakeIO) -> None:
    runner._tune_gc(io)  # type: ignore[arg-type]
    assert gc.get_threshold() == runner.GC_THRESHOLDS
    assert gc.get_freeze_count() > 0
    assert len(io.submitted) == 1  # the periodic full collection, on the I/O loop


def test_loading_pauses_the_collector_until_the_caches_sync(io: FakeIO) -> None:
    runner._loading_gc(io, pause=True)  # type: ignore[arg-type]
    assert not gc.isenabled()
    assert gc.get_threshold() == runner.GC_THRESHOLDS
    assert len(io.submitted) == 1  # turns it back on if the caches never sync
    runner._tune_gc(io)  # type: ignore[arg-type]
    assert gc.isenabled()


def test_a_standby_that_delays_its_caches_keeps_the_collector_on(io: FakeIO) -> None:
    runner._loading_gc(io, pause=False)  # type: ignore[arg-type]
    assert gc.isenabled()
    assert gc.get_threshold() == runner.GC_THRESHOLDS
    assert not io.submitted
