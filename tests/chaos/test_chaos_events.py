"""A flood of Normal events (one Scheduled per bind) must not silence FailedScheduling warnings.

Found by the chaos run: with 5,000 pods bound in a burst the outbox's event buffer filled with
Scheduled events and the FailedScheduling warnings of the unschedulable pods were dropped, so those
pods carried a condition but no event. A Warning now displaces the oldest queued Normal event.
"""

from __future__ import annotations

import collections

from ksched.scheduler.binder import ApiOutbox, OutboxSettings


def _outbox(size: int) -> ApiOutbox:
    box = object.__new__(ApiOutbox)  # only the buffer is exercised; no I/O thread needed
    box.settings = OutboxSettings(event_buffer=size)
    box._events = collections.deque()
    box.dropped_events = 0
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
