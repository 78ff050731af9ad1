"""What the loop tests share: a settable clock and an outbox that records instead of calling the API."""

from __future__ import annotations

from typing import Any

from ksched.model.pod import Pod
from ksched.scheduler.preemption import PreemptionJob


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
