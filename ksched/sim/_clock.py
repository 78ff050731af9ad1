"""Injected time for the embedded cluster.

Timestamps (creationTimestamp, deletionTimestamp, audit records) come from a :class:`Clock` so tests can
pin them; durations inside the asyncio loop use the loop's own clock, which is already monotonic.
"""

from __future__ import annotations

import calendar
import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock source: seconds since the epoch as a float."""

    def now(self) -> float: ...


class SystemClock:
    """The real wall clock (the default)."""

    def now(self) -> float:
        return time.time()


class FixedClock:
    """A clock that only moves when told to; for deterministic tests."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


_last_second: list[object] = [None, ""]


def rfc3339(t: float) -> str:
    """``2024-01-02T03:04:05Z`` (second precision, as metav1.Time serialises).

    The last formatted second is memoised because bulk creation stamps thousands of objects per second.
    """
    sec = int(t)
    if _last_second[0] == sec:
        return str(_last_second[1])
    text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec))
    _last_second[0] = sec
    _last_second[1] = text
    return text


def rfc3339_micro(t: float) -> str:
    """``2024-01-02T03:04:05.123456Z`` (metav1.MicroTime, used by Leases and events.k8s.io)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(t))) + f".{int((t % 1) * 1e6):06d}Z"


def seconds_since(ts: str | None, now: float) -> float:
    """Seconds from an RFC 3339 timestamp to ``now`` (0 when unset, unparsable or in the future)."""
    if not ts:
        return 0.0
    try:
        return max(0.0, now - calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return 0.0


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery's ``duration.HumanDuration`` (``5s``, ``3m20s``, ``2d3h``...)."""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    return f"{d // 365}y"


def age(ts: str | None, now: float) -> str:
    """How long ago an RFC 3339 timestamp was, as kubectl's AGE column prints it (``0s`` if unset)."""
    return human_duration(seconds_since(ts, now))
