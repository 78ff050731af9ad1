"""What the loop tests share: a settable clock and an outbox that records instead of calling the API."""

from __future__ import annotations

import dataclasses
from typing import Any

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.config.features import feature_gates
from ksched.framework.profile import build_profiles
from ksched.kube import events as kev
from ksched.metrics import FrameworkMetrics, Metrics
from ksched.model.pod import Pod
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.preemption import PreemptionJob
from ksched.scheduler.queue.factory import queue_for


class FakeClock:
    """Both the loop's monotonic and wall clock; tests move ``t`` by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class RecordingOutbox:
    """An :class:`~ksched.scheduler.binder.Outbox` that keeps every call for the test to read."""

    def __init__(self) -> None:
        self.binds: list[tuple[Pod, str]] = []
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.events: list[dict[str, Any]] = []
        self.jobs: list[PreemptionJob] = []

    def bind(self, pod: Pod, node: str) -> None:
        self.binds.append((pod, node))

    def patch_status(self, pod: Any, patch: dict[str, Any]) -> None:
        self.patches.append((pod.name, patch))

    def event(self, body: dict[str, Any]) -> None:
        self.events.append(body)

    def preempt(self, job: PreemptionJob) -> None:
        self.jobs.append(job)

    def status_of(self, name: str) -> list[dict[str, Any]]:
        return [p["status"] for n, p in self.patches if n == name]


def synced_scheduler(
    seed: int = 3, metrics: Metrics | None = None, gates: dict[str, bool] | None = None
) -> tuple[Scheduler, RecordingOutbox]:
    """A default-config scheduler on a fake clock, its informers synced, writing to a recording
    outbox: the loop as tests drive it by hand through its inbox. With ``metrics`` the profiles
    and the loop record into them, as in ``ksched run``; ``gates`` sets feature gates."""
    clock, outbox, config = FakeClock(), RecordingOutbox(), default_config()
    if gates:
        config = dataclasses.replace(config, feature_gates=feature_gates(gates))
    recorder = FrameworkMetrics(metrics) if metrics is not None else None
    profiles = build_profiles(config, seed=seed, recorder=recorder)
    sched = Scheduler(
        profiles=profiles,
        cache=ClusterCache(),
        queue=queue_for(config, profiles, clock=clock),
        outbox=outbox,
        metrics=metrics,
        clock=clock,
        wall_clock=clock,
    )
    for kind in ("nodes", "pods"):
        sched.inbox.put(kev.Synced(kind))
    return sched, outbox
