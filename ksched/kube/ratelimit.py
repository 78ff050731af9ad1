"""Backoff and client-side rate limiting, with injected clocks and random generators.

:func:`backoff_delay` is the arithmetic shared by request retries and the informer: exponential
growth from ``initial_s`` by ``factor`` per attempt, then jitter as client-go's ``wait.Jitter`` does
(``d * (1 + jitter * u)`` with ``u`` uniform in [0, 1)), clipped to ``max_s``. :class:`Backoff` adds
client-go's ``ExponentialBackoffManager`` reset: after a healthy period longer than
``reset_after_s`` with no backoff, the next delay starts from ``initial_s`` again.

:class:`TokenBucket` is client-go's ``flowcontrol`` token bucket (``golang.org/x/time/rate``): the
bucket holds at most ``burst`` tokens and refills at ``qps`` per second; a request takes a token now
and waits for the debt to be repaid, so the long-run rate is ``qps`` and at most ``burst`` requests go
out back to back. It is used from one event loop only and takes no lock.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]
"""Monotonic seconds (``time.monotonic`` in production, a fake in tests)."""


def backoff_delay(
    attempt: int, *, initial_s: float, max_s: float, factor: float = 2.0, jitter: float = 1.0, u: float = 0.0
) -> float:
    """Delay before retry number ``attempt`` (0-based); ``u`` in [0, 1) is the random draw."""
    if attempt < 0:
        raise ValueError(f"attempt must be >= 0, got {attempt}")
    base = initial_s * factor ** min(attempt, 64) if factor > 1.0 else initial_s
    base = min(base, max_s)
    return min(base * (1.0 + jitter * u), max_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffSettings:
    """Exponential backoff with jitter; the defaults are client-go's reflector (0.8 s .. 30 s)."""

    initial_s: float = 0.8
    """First delay, before jitter."""
    max_s: float = 30.0
    """No delay is longer than this, jitter included."""
    factor: float = 2.0
    """Growth per consecutive failure."""
    jitter: float = 1.0
    """A delay ``d`` becomes ``d * (1 + jitter * u)``, ``u`` uniform in [0, 1)."""
    reset_after_s: float = 120.0
    """A failure after this long without backoff starts again from ``initial_s``."""


class Backoff:
    """Consecutive-failure backoff with a reset after a healthy period (not thread-safe)."""

    def __init__(
        self,
        settings: BackoffSettings | None = None,
        *,
        rng: random.Random | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.settings = settings or BackoffSettings()
        self._rng = rng or random.Random()
        self._clock = clock
        self._attempt = 0
        self._last: float | None = None

    @property
    def attempt(self) -> int:
        """How many delays were handed out since the last reset."""
        return self._attempt

    def next_delay(self) -> float:
        """The delay to sleep before the next try; grows with each call until a reset."""
        s = self.settings
        now = self._clock()
        if self._last is not None and now - self._last > s.reset_after_s:
            self._attempt = 0
        self._last = now
        d = backoff_delay(
            self._attempt,
            initial_s=s.initial_s,
            max_s=s.max_s,
            factor=s.factor,
            jitter=s.jitter,
            u=self._rng.random(),
        )
        self._attempt += 1
        return d

    def reset(self) -> None:
        """Start from ``initial_s`` on the next failure."""
        self._attempt = 0
        self._last = None


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved; ``qps <= 0`` means no limit."""

    def __init__(self, qps: float, burst: int, *, clock: Clock = time.monotonic) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be >= 1 when qps > 0, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take one token; return how long to wait (seconds) before using it (0 if available now)."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0.0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        """Take one token, sleeping on the running loop until it is due; returns the wait (seconds)."""
        delay = self.reserve()
        if delay > 0.0:
            await asyncio.sleep(delay)
        return delay
