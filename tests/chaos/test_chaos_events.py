"""A flood of Normal events (one Scheduled per bind) must not silence FailedScheduling warnings.

Found by the chaos run: with 5,000 pods bound in a burst the outbox's event buffer filled with
Scheduled events and the FailedScheduling warnings of the unschedulable pods were dropped, so those
pods carried a condition but no event. A Warning now displaces the oldest queued Normal event.
"""

from __future__ import annotations

import collections
from typing import Any

from ksched.scheduler.binder import ApiOutbox, OutboxSettings
from ksched.scheduler.reporting import Reporter
from tests.builders import pod


def _outbox(size: int) -> ApiOutbox:
    box = object.__new__(ApiOutbox)  # only the buffer is exercised; no I/O thread needed
    box.settings = OutboxSettings(event_buffer=size)
    box._events = collections.deque()
    box.dropped_events = 0
    box.skipped_events = 0
    return box


def test_chaos_events_warning_displaces_oldest_normal() -> None:
    box = _outbox(3)
    box._events.extend([{"type": "Normal", "n": 1}, {"type": "Warning", "n": 2}, {"type": "Normal", "n": 3}])
    assert box._make_room_for({"type": "Warning", "n": 4})
    assert [e["n"] for e in box._events] == [2, 3]
    assert box.dropped_events == 1
    assert not box._make_room_for({"type": "Normal", "n": 5})  # a Normal event is still just dropped


def test_chaos_events_buffer_of_warnings_stays() -> None:
    box = _outbox(2)
    box._events.extend([{"type": "Warning", "n": 1}, {"type": "Warning", "n": 2}])
    assert not box._make_room_for({"type": "Warning", "n": 3})
    assert [e["n"] for e in box._events] == [1, 2]


def test_chaos_events_not_built_when_the_buffer_is_full() -> None:
    """With the buffer full, the Reporter does not even build a Normal event's body (thousands of
    Scheduled events a second would otherwise be built to be dropped); a Warning still goes to
    the outbox, where it displaces a Normal one."""
    box = _outbox(2)
    handed: list[dict[str, Any]] = []
    box.event = handed.append  # type: ignore[method-assign]  # what the I/O loop would be given
    reporter = Reporter(box, wall_clock=lambda: 0.0, instance="test")
    p = pod(name="p", uid="u")
    reporter.event(p, "default-scheduler", "Normal", "Scheduled", "Binding", "bound")
    assert len(handed) == 1 and box.skipped_events == 0  # room: built and handed over
    box._events.extend([{"type": "Normal", "n": 1}, {"type": "Normal", "n": 2}])
    reporter.event(p, "default-scheduler", "Normal", "Scheduled", "Binding", "bound")
    assert len(handed) == 1 and box.skipped_events == 1  # full: not built
    reporter.event(p, "default-scheduler", "Warning", "FailedScheduling", "Scheduling", "no nodes")
    assert [e["type"] for e in handed] == ["Normal", "Warning"]
