"""The only place the differential test touches the scheduler's construction and control loop.

The control loop is refactored on its own schedule; when its wiring changes, this module is what
changes with it, and the recording must not. The contract the rest of the harness relies on:

- :func:`build` returns a :class:`Loop` running the default configuration's profiles with a seeded
  tie-break, the in-tree queue, a fresh cache, ``outbox`` for every write, ``inbox`` for everything
  coming in and ``clock`` as both the monotonic and the wall clock, already told that nodes and
  pods are synced;
- whatever is put in ``inbox`` (informer events, bind and preemption outcomes) waits there until
  the loop runs;
- :meth:`Loop.settle` runs the loop until nothing is left to do at the current clock time: the
  inbox empty and no pod in activeQ or backoffQ (the queue pops backing-off pods when activeQ is
  empty, so a backoff never leaves the loop idle). Parked pods stay parked until an event or the
  clock moves them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.config.features import feature_gates
from ksched.framework.profile import build_profiles
from ksched.kube import events as kev
from ksched.scheduler.binder import Outbox
from ksched.scheduler.inbox import Inbox
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.queue.factory import queue_for

MAX_STEPS_PER_SETTLE = 2_000_000
"""Loop iterations one settle may take before the harness calls it a livelock."""


class Loop:
    """A scheduler driven step by step from the test's thread."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def settle(self) -> None:
        steps = 0

        def idle(s: Scheduler) -> bool:
            nonlocal steps
            steps += 1
            if steps > MAX_STEPS_PER_SETTLE:
                raise RuntimeError(
                    f"the loop did not settle in {MAX_STEPS_PER_SETTLE} steps: {s.queue.pending()}"
                )
            pending = s.queue.pending()
            return len(s.inbox) == 0 and pending["active"] == 0 and pending["backoff"] == 0

        self.scheduler.run(until=idle)


def build(
    *, seed: int, clock: Callable[[], float], outbox: Outbox, inbox: Inbox, batching: bool = True
) -> Loop:
    """``batching``: the ``OpportunisticBatching`` gate (on by default, as upstream's)."""
    config = dataclasses.replace(
        default_config(), feature_gates=feature_gates({"OpportunisticBatching": batching})
    )
    profiles = build_profiles(config, seed=seed)
    queue = queue_for(config, profiles, clock=clock)
    for kind in ("nodes", "pods"):
        inbox.put(kev.Synced(kind))
    scheduler = Scheduler(
        profiles=profiles,
        cache=ClusterCache(),
        queue=queue,
        outbox=outbox,
        inbox=inbox,
        clock=clock,
        wall_clock=clock,
    )
    return Loop(scheduler)
