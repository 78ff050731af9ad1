"""The scheduling thread's single inbox, and every message other threads put in it.

Everything that changes the scheduler's state arrives here. The scheduling thread drains the inbox
between cycles and is the only one that applies anything, which is what makes the cache and the
queue lock-free. Tests can feed it directly and replay an exact order of messages.

The messages, and who sends them::

    Upserted Deleted Invalid Relisted Synced   informers, on the I/O thread (ksched.kube.events)
    BindDone                                   the outbox, when a binding is answered
    PreemptionDone                             the outbox, when a preemption's API work ends
    PermitDecided                              WaitingPods.allow / reject, from any thread
    PreBindProgress                            a pending PreBind's waker (a request answered)
    LeadershipChanged                          the leader elector, on the I/O thread
    StopRequested                              signal handlers (and tests)
    ProfileRequest                             /debug/profile, on the I/O thread

The informer events are defined by :mod:`ksched.kube.events`, because kube may not import the
scheduler; they are re-exported here so that :data:`Message` names the whole set. The loop applies
each message through one table keyed by its exact type (:meth:`Scheduler.dispatch_table`); a
message of any other type is logged and dropped.
"""

from __future__ import annotations

import concurrent.futures
import queue
from dataclasses import dataclass

from ksched.kube.events import Deleted, InformerEvent, Invalid, Relisted, Synced, Upserted
from ksched.model.pod import Pod


@dataclass(frozen=True, slots=True)
class BindDone:
    """The outcome of posting a binding: ``error`` is None on success."""

    pod: Pod
    node: str
    error: Exception | None = None


@dataclass(frozen=True, slots=True)
class PreemptionDone:
    """The API work of a preemption is over; ``error`` is the first failure, if any."""

    preemptor: Pod
    node: str
    error: Exception | None = None
    seconds: float = 0.0
    """How long the work took (``scheduler_preemption_goroutines_duration_seconds``)."""


@dataclass(frozen=True, slots=True)
class PermitDecided:
    """Every Permit plugin allowed the waiting pod ``uid``, or one rejected it."""

    uid: str


@dataclass(frozen=True, slots=True)
class PreBindProgress:
    """Something the pending PreBind of pod ``uid`` waits for may have happened: poll it."""

    uid: str


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


Message = (
    InformerEvent
    | BindDone
    | PreemptionDone
    | PermitDecided
    | PreBindProgress
    | LeadershipChanged
    | StopRequested
    | ProfileRequest
)
"""Everything the inbox carries."""


class Inbox:
    """A thread-safe FIFO; ``put`` from any thread, ``drain`` / ``wait`` from the scheduling thread."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue[Message] = queue.SimpleQueue()

    def put(self, item: Message) -> None:
        self._q.put(item)

    def drain(self, limit: int = 100_000) -> list[Message]:
        """Everything queued now (up to ``limit``), without blocking.

        Takes the ``qsize()`` items present rather than asking until ``Empty``: the loop drains on
        every iteration, mostly finding a few items or none, and the exception cost more than the
        items. Items put meanwhile wait for the next drain.
        """
        out: list[Message] = []
        get = self._q.get_nowait
        try:
            for _ in range(min(self._q.qsize(), limit)):
                out.append(get())
        except queue.Empty:  # only if another thread consumes too, which the scheduler never does
            pass
        return out

    def wait(self, timeout: float | None) -> Message | None:
        """Block until one item arrives or ``timeout`` passes (None when it passed)."""
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None

    def __len__(self) -> int:
        return self._q.qsize()


__all__ = [
    "BindDone",
    "Deleted",
    "Inbox",
    "Invalid",
    "LeadershipChanged",
    "Message",
    "PermitDecided",
    "PreBindProgress",
    "PreemptionDone",
    "ProfileRequest",
    "Relisted",
    "StopRequested",
    "Synced",
    "Upserted",
]
