"""Backoff arithmetic and the token bucket, with injected clocks and random draws."""

from __future__ import annotations

import random

import pytest

from ksched.kube.ratelimit import Backoff, BackoffSettings, TokenBucket, backoff_delay


class FakeClock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class FixedRandom(random.Random):
    def __init__(self, u: float) -> None:
        super().__init__(0)
        self.u = u

    def random(self) -> float:
        return self.u


@pytest.mark.parametrize(
    ("attempt", "u", "expected"),
    [
        pytest.param(0, 0.0, 0.8, id="first delay is the initial one without jitter"),
        pytest.param(1, 0.0, 1.6, id="doubles"),
        pytest.param(3, 0.0, 6.4, id="doubles again"),
        pytest.param(0, 0.5, 1.2, id="jitter adds up to a fraction of the delay"),
        pytest.param(5, 0.0, 25.6, id="just under the cap"),
        pytest.param(6, 0.0, 30.0, id="capped"),
        pytest.param(5, 0.99, 30.0, id="jitter never passes the cap"),
        pytest.param(500, 0.0, 30.0, id="huge attempt numbers do not overflow"),
    ],
)
def test_backoff_delay_reflector_defaults(attempt: int, u: float, expected: float) -> None:
    assert backoff_delay(attempt, initial_s=0.8, max_s=30.0, u=u) == pytest.approx(expected)


def test_backoff_delay_rejects_negative_attempts() -> None:
    with pytest.raises(ValueError, match="attempt"):
        backoff_delay(-1, initial_s=1.0, max_s=2.0)


def test_backoff_grows_and_resets_after_a_healthy_period() -> None:
    clock = FakeClock()
    b = Backoff(BackoffSettings(initial_s=1.0, max_s=8.0, jitter=0.0, reset_after_s=60.0), clock=clock)
    assert [b.next_delay() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    clock.t += 59.0
    assert b.next_delay() == 8.0  # not healthy long enough
    clock.t += 61.0
    assert b.next_delay() == 1.0
    b.reset()
    assert b.attempt == 0 and b.next_delay() == 1.0


def test_backoff_jitter_comes_from_the_injected_generator() -> None:
    b = Backoff(
        BackoffSettings(initial_s=1.0, max_s=100.0, jitter=1.0), rng=FixedRandom(0.25), clock=FakeClock()
    )
    assert b.next_delay() == pytest.approx(1.25)
    assert b.next_delay() == pytest.approx(2.5)


def test_token_bucket_allows_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    tb = TokenBucket(10.0, 3, clock=clock)
    assert [tb.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert tb.reserve() == pytest.approx(0.1)
    assert tb.reserve() == pytest.approx(0.2)  # reservations queue up behind each other
    clock.t += 0.2
    assert tb.reserve() == pytest.approx(0.1)


def test_token_bucket_refills_to_burst_only() -> None:
    clock = FakeClock()
    tb = TokenBucket(100.0, 2, clock=clock)
    tb.reserve()
    tb.reserve()
    clock.t += 3600.0
    assert [tb.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.01])


def test_token_bucket_long_run_rate_is_qps() -> None:
    clock = FakeClock()
    tb = TokenBucket(50.0, 5, clock=clock)
    waits = [tb.reserve() for _ in range(105)]
    # 5 at once, then the 105th request is due after 100 / 50 = 2 seconds
    assert waits[-1] == pytest.approx(2.0)


def test_token_bucket_unlimited_and_invalid() -> None:
    tb = TokenBucket(0.0, 0)
    assert tb.unlimited and all(tb.reserve() == 0.0 for _ in range(1000))
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(5.0, 0)
