"""A flood of Normal events (one Scheduled per bind) must not silence FailedScheduling warnings.

Found by the chaos run: with 5,000 pods bound in a burst the outbox's event buffer filled with
Scheduled events and the FailedScheduling warnings of the unschedulable pods were dropped, so those
pods carried a condition but no event. A Warning now displaces the oldest queued Normal event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from ksched.kube import ApiClient, IOThread
from ksched.scheduler.binder import ApiOutbox, OutboxSettings
from ksched.scheduler.inbox import Inbox
from ksched.scheduler.reporting import Reporter
from tests.builders import pod


def _outbox(size: int) -> ApiOutbox:
    """Only the buffer is exercised: no I/O thread, no client, and a rate limit that lets the
    sender take nothing before the test has looked."""
    settings = OutboxSettings(event_buffer=size, event_qps=0.001, event_burst=1)
    return ApiOutbox(cast(IOThread, None), cast(ApiClient, None), Inbox(), settings)


def _event(event_type: str, n: int) -> dict[str, Any]:
    return {"type": event_type, "reason": "r", "n": n, "regarding": {"kind": "Pod", "name": f"p{n}"}}


def _queued(box: ApiOutbox, *events: dict[str, Any], then: Callable[[], Any] = lambda: None) -> list[int]:
    """Hand ``events`` to the outbox on a loop and return the ``n`` of what waits to be sent."""

    async def run() -> list[int]:
        box.record_event(_event("Normal", 0))  # taken at once by the sender (the one token)
        await asyncio.sleep(0.01)
        for ev in events:
            box.record_event(ev)
        then()
        queued = [w.body["n"] for w in box._events]
        await box.close()
        return queued

    return asyncio.run(run())


def test_chaos_events_warning_displaces_oldest_normal() -> None:
    box = _outbox(3)
    queued = _queued(
        box,
        _event("Normal", 1),
        _event("Warning", 2),
        _event("Normal", 3),
        _event("Warning", 4),
        _event("Normal", 5),  # a Normal event is still just dropped
    )
    assert queued == [2, 3, 4]
    assert box.dropped_events == 3  # 1 displaced, 5 dropped, and 0 failed to send (no client here)


def test_chaos_events_buffer_of_warnings_stays() -> None:
    box = _outbox(2)
    assert _queued(box, _event("Warning", 1), _event("Warning", 2), _event("Warning", 3)) == [1, 2]


def test_chaos_events_not_built_when_the_buffer_is_full() -> None:
    """With the buffer full, the Reporter does not even build a Normal event's body (thousands of
    Scheduled events a second would otherwise be built to be dropped); a Warning still goes to
    the outbox, where it displaces a Normal one."""
    box = _outbox(2)
    handed: list[dict[str, Any]] = []
    box.event = handed.append  # type: ignore[method-assign]  # what the I/O loop would be given
    reporter = Reporter(box, wall_clock=lambda: 0.0, instance="test")
    p = pod(name="p", uid="u")

    def report() -> None:
        reporter.event(p, "default-scheduler", "Normal", "Scheduled", "Binding", "bound")
        assert len(handed) == 1 and box.skipped_events == 1  # full: not built
        reporter.event(p, "default-scheduler", "Warning", "FailedScheduling", "Scheduling", "no nodes")

    reporter.event(p, "default-scheduler", "Normal", "Scheduled", "Binding", "bound")
    assert len(handed) == 1 and box.skipped_events == 0  # room: built and handed over
    _queued(box, _event("Normal", 1), _event("Normal", 2), then=report)
    assert [e["type"] for e in handed] == ["Normal", "Warning"]
