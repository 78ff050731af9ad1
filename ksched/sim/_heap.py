"""The serving process's collector policy: keep the store's long-lived heap out of CPython's scans.

Stored objects and their history are JSON dicts that never form cycles and live until replaced,
so every full collection that walks them is wasted work, and it grows with the cluster (at 50,000
nodes one pass takes about a second). So ``ksched sim serve`` runs inside :func:`serving`: its
startup heap is frozen, automatic full collections are off, and :func:`collect_every` runs one per
:data:`FULL_GC_INTERVAL_S` that walks only what was made since the previous one, then freezes the
survivors. Every :data:`RESCAN_EVERY` passes it unfreezes first and walks the whole heap, so a cycle
that formed among frozen objects (a closed connection, a finished watch) is still freed in bounded
time. A bulk creation (the ``/admin`` endpoints, thousands of objects at once) freezes what it made
through :func:`set_aside`, which does nothing outside :func:`serving`: an in-process
:class:`~ksched.sim.cluster.SimCluster` leaves its host's collector alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

GC_THRESHOLDS = (10_000, 10, 1_000_000_000)
"""Young collections as usual (a larger first generation lets more short-lived objects die before
they are promoted), automatic full collections never."""
FULL_GC_INTERVAL_S = 60.0
"""How often the serving process runs a full collection itself."""
RESCAN_EVERY = 10
"""One periodic collection in this many walks the frozen heap too."""

_serving = False


def set_aside() -> None:
    """Freeze the heap as it is now (O(1)), when serving: called after a bulk creation, whose
    objects would otherwise be walked by the next periodic collection. Cycles frozen with them are
    freed by the next whole-heap pass."""
    if _serving:
        gc.freeze()


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """The serving process's collector settings while the block runs; restored after."""
    global _serving
    old = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    _serving = True
    try:
        yield
    finally:
        _serving = False
        gc.set_threshold(*old)
        gc.unfreeze()


def collect_pass(n: int) -> None:
    """The ``n``-th periodic collection (from 1): the objects made since the last one, or, every
    :data:`RESCAN_EVERY`-th, the whole heap; the survivors are frozen either way."""
    if n % RESCAN_EVERY == 0:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


async def collect_every(interval_s: float) -> None:
    """Run :func:`collect_pass` every ``interval_s`` until cancelled."""
    n = 0
    while True:
        await asyncio.sleep(interval_s)
        n += 1
        collect_pass(n)
