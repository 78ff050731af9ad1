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
