"""/debug/profile's scheduling-thread end: a profile runs for the requested seconds of the loop's
clock, one at a time, and its stats load with ``pstats``."""

from __future__ import annotations

import concurrent.futures
import marshal
import pstats

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.framework.profile import build_profiles
from ksched.scheduler.inbox import Inbox, ProfileRequest
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.profiling import LoopProfiler, profile_requester
from ksched.scheduler.queue import queue_for
from tests.unit.scheduler.loop_support import FakeClock, RecordingOutbox


def _request(seconds: float) -> ProfileRequest:
    return ProfileRequest(seconds, concurrent.futures.Future())


def _stats(data: bytes) -> pstats.Stats:
    stats = pstats.Stats()
    stats.stats = marshal.loads(data)  # type: ignore[attr-defined]
    return stats


def test_a_profile_ends_once_its_seconds_have_passed_on_the_loop_clock() -> None:
    clock = FakeClock()
    profiler = LoopProfiler(clock)
    req = _request(2.0)
    profiler.start(req)
    profiler.tick()
    assert profiler.running and not req.result.done()
    clock.t += 2.0
    profiler.tick()
    assert not profiler.running
    assert _stats(req.result.result()).stats  # type: ignore[attr-defined]


def test_a_second_request_while_one_runs_fails_and_leaves_the_first_running() -> None:
    profiler = LoopProfiler(FakeClock())
    first, second = _request(5.0), _request(5.0)
    profiler.start(first)
    profiler.start(second)
    with pytest.raises(RuntimeError, match="already being taken"):
        second.result.result(timeout=0)
    assert profiler.running
    profiler.finish()  # as the runner does on shutdown: the requester still gets its stats
    assert first.result.done() and not profiler.running


def test_the_loop_serves_a_request_put_in_its_inbox() -> None:
    clock = FakeClock()
    config = default_config()
    profiles = build_profiles(config, seed=3)
    inbox = Inbox()
    sched = Scheduler(
        profiles=profiles,
        cache=ClusterCache(),
        queue=queue_for(config, profiles, clock=clock),
        outbox=RecordingOutbox(),
        clock=clock,
        wall_clock=clock,
        inbox=inbox,
    )
    future = profile_requester(inbox)(1.0)
    sched.run(until=lambda s: len(s.inbox) == 0)
    assert sched.profiler.running and not future.done()
    clock.t += 1.0
    sched.run(until=lambda s: not s.profiler.running)
    assert isinstance(future.result(timeout=0), bytes)
