"""Profiling the scheduling thread on request (``/debug/profile``).

cProfile sees only the thread that enables it, so the HTTP handler on the I/O thread cannot profile
the loop itself. It puts a :class:`~ksched.scheduler.inbox.ProfileRequest` in the inbox (see
:func:`profile_requester`); the scheduling thread starts a :class:`LoopProfiler`, checks on every
loop step whether the requested seconds have passed, and fulfils the request's future with the
statistics in the marshal format ``pstats.Stats`` loads.

One profile at a time: a request while another runs fails at once. The loop wakes at least once a
second even when idle, so a profile ends at most about a second late.
"""

from __future__ import annotations

import concurrent.futures
import cProfile
import marshal
from collections.abc import Callable

from ksched.scheduler.inbox import Inbox, ProfileRequest


def profile_requester(inbox: Inbox) -> Callable[[float], concurrent.futures.Future[bytes]]:
    """What the server calls (on the I/O thread) to profile the scheduling thread for some seconds."""

    def request(seconds: float) -> concurrent.futures.Future[bytes]:
        result: concurrent.futures.Future[bytes] = concurrent.futures.Future()
        inbox.put(ProfileRequest(seconds, result))
        return result

    return request


class LoopProfiler:
    """The scheduling thread's end of ``/debug/profile``. Scheduling thread only."""

    __slots__ = ("_clock", "_profiler", "_result", "_until")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._profiler: cProfile.Profile | None = None
        self._until = 0.0
        self._result: concurrent.futures.Future[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._profiler is not None

    def start(self, req: ProfileRequest) -> None:
        """Profile this thread from now for ``req.seconds``; refuse while a profile runs."""
        if self._profiler is not None:
            req.result.set_exception(RuntimeError("a profile is already being taken"))
            return
        self._profiler = cProfile.Profile()
        self._until = self._clock() + req.seconds
        self._result = req.result
        self._profiler.enable()

    def tick(self) -> None:
        """Finish the running profile once its seconds have passed (called on every loop step)."""
        if self._profiler is None or self._clock() < self._until:
            return
        self.finish()

    def finish(self) -> None:
        """Stop a running profile and hand its stats to the requester (also on shutdown)."""
        profiler, result = self._profiler, self._result
        if profiler is None or result is None:
            return
        profiler.disable()
        profiler.create_stats()
        if not result.done():
            result.set_result(marshal.dumps(profiler.stats))  # type: ignore[attr-defined]
        self._profiler = None
        self._result = None
