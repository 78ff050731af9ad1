"""A pod that fails scheduling 20 times, as ``kubectl describe pod`` shows it: one Event per series.

The scheduler runs in-process against the embedded cluster; the outbox folds isomorphic
FailedScheduling Events into series as client-go's events broadcaster does (the second occurrence
PATCHes ``series.count: 2``; the final count is written when the series ends, upstream 6 minutes
after its last occurrence, here ``WINDOW_S``). The failures are driven by deleting pods bound to a
node: each deletion is a cluster event that NodeResourcesFit's hint answers Queue, and with
SchedulerPopFromBackoffQ the pod is retried at once, failing with the same message each time.

The isomorphism key holds the pod's reference with its resourceVersion (upstream ``getKey`` and
``GetReference``). So a fresh pod's first failure, recorded before the scheduler's own
``PodScheduled`` patch changed the pod, is an Event of its own, and the 19 after it one series —
kube-scheduler's output too. A pod whose condition already says why it is pending (set by an
earlier scheduler, say) is not patched again, and its 20 failures make one Event.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sched_harness import InProcessScheduler, condition, events_about, kubectl, pod, wait_until

from ksched.model.pod import pod_from_dict
from ksched.scheduler.binder import OutboxSettings
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.reporting import Reporter
from ksched.sim import SimCluster
from ksched.sim.workloads import node_template, pod_template

pytestmark = pytest.mark.kubectl

StartScheduler = Callable[..., InProcessScheduler]
WINDOW_S = 1.5
"""The series window (upstream ``finishTime``, 6 minutes): short, so the final count comes quickly."""
SETTINGS = OutboxSettings(event_qps=100_000.0, event_burst=100_000, event_series_finish_s=WINDOW_S)
FAILURES = 20
MESSAGE = (
    "0/3 nodes are available: 3 Insufficient cpu. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def _attempts(sched: InProcessScheduler) -> float:
    registry = sched.metrics.registry
    assert registry is not None
    labels = {"result": "unschedulable", "profile": "default-scheduler"}
    return registry.get_sample_value("scheduler_schedule_attempts_total", labels) or 0.0


def _cluster(sim: SimCluster) -> None:
    """Three 4-cpu nodes and, on node-0, the small pods whose deletions make the big pod retry."""
    sim.add_nodes(3, node_template(cpu="4", memory="16Gi"))
    for i in range(FAILURES - 1):
        body = pod_template(cpu="10m", memory="10Mi")
        body["metadata"] = {"name": f"filler-{i}"}
        body["spec"]["nodeName"] = "node-0"
        sim.store.create("pods", body, namespace="default")


def _create_big(sim: SimCluster) -> None:
    body = pod_template(cpu="8", memory="1Gi")
    body["metadata"] = {"name": "big"}
    sim.store.create("pods", body, namespace="default")


def _seen_by_scheduler(sim: SimCluster, sched: InProcessScheduler) -> None:
    """Wait until the scheduler's record of ``big`` is the store's current version."""
    uid = pod(sim, "big")["metadata"]["uid"]

    def current(s: Scheduler) -> str:
        got = s.handlers.pending.get(uid)
        return got.resource_version if got is not None else ""

    wait_until(
        lambda: sched.probe(current) == pod(sim, "big")["metadata"]["resourceVersion"],
        what="the scheduler to see the pod's latest version",
    )


def _fail_again_and_again(sim: SimCluster, sched: InProcessScheduler) -> None:
    """One failure per deleted filler pod, each waited for (deletions while the pod is in flight
    would be folded into one retry)."""
    for i in range(FAILURES - 1):
        sim.store.delete("pods", f"filler-{i}", "default", grace_period_s=0)
        wait_until(lambda n=i: _attempts(sched) >= n + 2, what=f"failure {i + 2}")
    assert _attempts(sched) == FAILURES


def _describe_events(kubeconfig: Path, name: str) -> list[str]:
    """The FailedScheduling lines of the Events section of ``kubectl describe pod``."""
    section = kubectl(kubeconfig, "describe", "pod", name).split("Events:", 1)[1]
    print(f"kubectl describe pod {name} ... Events:{section}")
    return [line.strip() for line in section.splitlines() if "FailedScheduling" in line]


def _series_count(ev: dict[str, Any]) -> int:
    return int((ev.get("series") or {}).get("count", 1))


def test_sched_twenty_failures_of_a_fresh_pod_are_its_first_event_and_a_series_of_19(
    sim: SimCluster, start_scheduler: StartScheduler, kubeconfig: Path
) -> None:
    _cluster(sim)
    sched = start_scheduler(outbox_settings=SETTINGS)
    _create_big(sim)
    wait_until(lambda: _attempts(sched) == 1, what="the first failure")
    wait_until(lambda: condition(pod(sim, "big")), what="the PodScheduled condition")
    first_transition = condition(pod(sim, "big"))["lastTransitionTime"]  # type: ignore[index]
    _seen_by_scheduler(sim, sched)
    _fail_again_and_again(sim, sched)

    events = wait_until(
        lambda: [e for e in events_about(sim, "big", "FailedScheduling") if _series_count(e) == 19],
        timeout=WINDOW_S * 4,
        what="the series' final count",
    )
    counts = sorted(_series_count(e) for e in events_about(sim, "big", "FailedScheduling"))
    assert counts == [1, 19]
    assert events[0]["note"] == MESSAGE
    cond = condition(pod(sim, "big"))
    assert cond is not None and cond["lastTransitionTime"] == first_transition
    lines = _describe_events(kubeconfig, "big")
    assert len(lines) == 2
    assert sum("(x19 over " in line for line in lines) == 1, lines
    assert all(line.endswith(MESSAGE) and "default-scheduler" in line for line in lines), lines


def test_sched_twenty_failures_of_a_pod_already_marked_unschedulable_are_one_event(
    sim: SimCluster, start_scheduler: StartScheduler, kubeconfig: Path
) -> None:
    _cluster(sim)
    _create_big(sim)
    marked = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": MESSAGE}
    sim.store.mutate(
        "pods", "big", "default", lambda p: {**p, "status": {**p["status"], "conditions": [marked]}}
    )
    sched = start_scheduler(outbox_settings=SETTINGS)
    wait_until(lambda: _attempts(sched) == 1, what="the first failure")
    version = pod(sim, "big")["metadata"]["resourceVersion"]
    _fail_again_and_again(sim, sched)

    (ev,) = wait_until(
        lambda: [e for e in events_about(sim, "big", "FailedScheduling") if _series_count(e) == FAILURES],
        timeout=WINDOW_S * 4,
        what="the series' final count",
    )
    assert len(events_about(sim, "big", "FailedScheduling")) == 1
    assert ev["regarding"]["resourceVersion"] == version == pod(sim, "big")["metadata"]["resourceVersion"]
    (line,) = _describe_events(kubeconfig, "big")
    assert f"(x{FAILURES} over " in line and line.endswith(MESSAGE), line


def test_sched_outbox_twenty_isomorphic_events_show_as_one_line(
    sim: SimCluster, start_scheduler: StartScheduler, kubeconfig: Path
) -> None:
    """The outbox alone, as a plugin's or the loop's Reporter uses it: 20 identical Events about
    a pod no profile schedules."""
    sim.add_nodes(1)
    sched = start_scheduler(outbox_settings=SETTINGS)
    body = pod_template(scheduler_name="someone-else")
    body["metadata"] = {"name": "web-1"}
    sim.store.create("pods", body, namespace="default")
    record = pod_from_dict(pod(sim, "web-1"))
    reporter = Reporter(sched.outbox, wall_clock=time.time, instance="test")
    for _ in range(FAILURES):
        reporter.event(record, "default-scheduler", "Warning", "FailedScheduling", "Scheduling", "no fit")
    wait_until(
        lambda: [e for e in events_about(sim, "web-1") if _series_count(e) == FAILURES],
        timeout=WINDOW_S * 4,
        what="the series' final count",
    )
    (line,) = _describe_events(kubeconfig, "web-1")
    assert f"(x{FAILURES} over " in line and line.endswith("no fit"), line
