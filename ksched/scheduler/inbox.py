"""The scheduling thread's single inbox, and the messages other threads put in it.

Everything that changes the scheduler's state arrives here: informer events (from the I/O
thread), bind outcomes, leadership changes, profile requests and stop requests. The scheduling
thread drains it between cycles and is the only one that applies anything, which is what makes the
cache and the queue lock-free. Tests can feed it directly and replay an exact order of events.
"""

from __future__ import annotations

import concurrent.futures
import queue
from dataclasses import dataclass
from typing import Any

from ksched.model.pod import Pod


@dataclass(frozen=True, slots=True)
class BindDone:
    """The outcome of posting a binding: ``error`` is None on success."""

    pod: Pod
    node: str
    error: Exception | None = None


@dataclass(frozen=True, slots=True)
class LeadershipChanged:
    leading: bool


@dataclass(frozen=True, slots=True)
class StopRequested:
    reason: str = "stop requested"


@dataclass(frozen=True, slots=True)
class ProfileRequest:
    """Run the scheduling thread under cProfile for ``seconds`` and fulfil ``result`` with the stats."""

    seconds: float
    result: concurrent.futures.Future[bytes]


class Inbox:
    """A thread-safe FIFO; ``put`` from any thread, ``drain`` / ``wait`` from the scheduling thread."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def put(self, item: Any) -> None:
        self._q.put(item)

    def drain(self, limit: int = 100_000) -> list[Any]:
        """Everything queued now (up to ``limit``), without blocking.

        Takes the ``qsize()`` items present rather than asking until ``Empty``: the loop drains on
        every iteration, mostly finding a few items or none, and the exception cost more than the
        items. Items put meanwhile wait for the next drain.
        """
        out: list[Any] = []
        get = self._q.get_nowait
        try:
            for _ in range(min(self._q.qsize(), limit)):
                out.append(get())
        except queue.Empty:  # only if another thread consumes too, which the scheduler never does
            pass
        return out

    def wait(self, timeout: float | None) -> Any | None:
        """Block until one item arrives or ``timeout`` passes (None when it passed)."""
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None

    def __len__(self) -> int:
        return self._q.qsize()
