"""The scheduler process's collector policy (``runner._tune_gc``), applied once the caches sync."""

from __future__ import annotations

import gc
from collections.abc import Coroutine
from typing import Any

from ksched import runner


class FakeIO:
    """Records what would run on the I/O loop instead of running it."""

    def __init__(self) -> None:
        self.submitted: list[Coroutine[Any, Any, Any]] = []

    def submit(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.submitted.append(coro)


def test_tune_gc_freezes_the_synced_heap_and_schedules_full_collections() -> None:
    old = gc.get_threshold()
    io = FakeIO()
    try:
        runner._tune_gc(io)  # type: ignore[arg-type]
        assert gc.get_threshold() == runner.GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
        assert len(io.submitted) == 1  # the periodic full collection, on the I/O loop
    finally:
        for coro in io.submitted:
            coro.close()
        gc.unfreeze()
        gc.set_threshold(*old)


def test_loading_pauses_the_collector_until_the_caches_sync() -> None:
    old = gc.get_threshold()
    io = FakeIO()
    try:
        runner._loading_gc(io, pause=True)  # type: ignore[arg-type]
        assert not gc.isenabled()
        assert gc.get_threshold() == runner.GC_THRESHOLDS
        assert len(io.submitted) == 1  # turns it back on if the caches never sync
        runner._tune_gc(io)  # type: ignore[arg-type]
        assert gc.isenabled()
    finally:
        gc.enable()
        for coro in io.submitted:
            coro.close()
        gc.unfreeze()
        gc.set_threshold(*old)


def test_a_standby_that_delays_its_caches_keeps_the_collector_on() -> None:
    old = gc.get_threshold()
    io = FakeIO()
    try:
        runner._loading_gc(io, pause=False)  # type: ignore[arg-type]
        assert gc.isenabled()
        assert gc.get_threshold() == runner.GC_THRESHOLDS
        assert not io.submitted
    finally:
        gc.set_threshold(*old)
