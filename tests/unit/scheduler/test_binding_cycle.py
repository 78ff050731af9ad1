"""Reserve / Permit / PreBind / PostBind in the scheduling loop, fed through its inbox with a
recording outbox (no threads, no HTTP), and guarded plugin failures reported on the pod."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.framework import api
from ksched.framework.loader import PluginRegistry
from ksched.framework.profile import build_profiles
from ksched.kube import events as kev
from ksched.metrics import FrameworkMetrics, Metrics
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.inbox import BindDone
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.queue.factory import queue_for
from tests.builders import make_node, make_pod
from tests.unit.scheduler.loop_support import FakeClock
from tests.unit.scheduler.loop_support import RecordingOutbox as BaseOutbox


class RecordingOutbox(BaseOutbox):
    def condition(self, name: str) -> dict[str, Any] | None:
        for pod, patch in reversed(self.patches):
            if pod == name:
                return dict(patch["status"]["conditions"][0])
        return None

    def bound(self) -> list[str]:
        return [p.name for p, _ in self.binds]


LOG: list[str] = []
BEHAVIOUR: dict[str, Any] = {}


class Recorder:
    """A plugin at every binding-cycle point; BEHAVIOUR[point] overrides what it returns."""

    name = "Recorder"

    def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
        self.handle = handle
        BEHAVIOUR["handle"] = handle

    def _act(self, point: str, pod: api.Pod) -> Any:
        LOG.append(f"{self.name}.{point}({pod.name})")
        act = BEHAVIOUR.get(f"{self.name}.{point}")
        if callable(act):
            return act(pod)
        return act

    def reserve(self, state: api.CycleState, pod: api.Pod, node_name: str) -> api.Status:
        return self._act("reserve", pod) or api.SUCCESS

    def unreserve(self, state: api.CycleState, pod: api.Pod, node_name: str) -> None:
        self._act("unreserve", pod)

    def permit(self, state: api.CycleState, pod: api.Pod, node_name: str) -> tuple[api.Status, float]:
        return self._act("permit", pod) or (api.SUCCESS, 0)

    def pre_bind(self, state: api.CycleState, pod: api.Pod, node_name: str) -> api.Status:
        return self._act("pre_bind", pod) or api.SUCCESS

    def post_bind(self, state: api.CycleState, pod: api.Pod, node_name: str) -> None:
        self._act("post_bind", pod)


class Second(Recorder):
    name = "Second"


class Exploding:
    """A filter that raises for pods named ``bad*``."""

    name = "Exploding"

    def __init__(self, args: dict[str, Any], handle: api.Handle) -> None:
        pass

    def filter(self, state: api.CycleState, pod: api.Pod, cluster: api.ClusterView) -> api.FilterResult:
        if pod.name.startswith("bad"):
            raise ZeroDivisionError("division by zero")
        return api.FilterResult.all_pass()


def harness(*plugins: type) -> tuple[Scheduler, RecordingOutbox, FakeClock]:
    LOG.clear()
    BEHAVIOUR.clear()
    registry = PluginRegistry({p.name: p for p in plugins})  # type: ignore[attr-defined]
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": p.name} for p in plugins]}},  # type: ignore[attr-defined]
            }
        ],
    }
    config = config_from_dict(doc, known_plugins=registry.names(), implements=registry.implements)
    clock = FakeClock()
    outbox = RecordingOutbox()
    metrics = Metrics()
    profiles = build_profiles(config, registry=registry, seed=3, recorder=FrameworkMetrics(metrics))
    queue = queue_for(config, profiles, clock=clock)
    sched = Scheduler(
        profiles=profiles,
        cache=ClusterCache(),
        queue=queue,
        outbox=outbox,
        clock=clock,
        wall_clock=clock,
        metrics=metrics,
    )
    for kind in ("nodes", "pods"):
        sched.inbox.put(kev.Synced(kind))
    sched.inbox.put(kev.Upserted("nodes", node_from_dict(make_node("n1", cpu="4", memory="8Gi", pods=10))))
    return sched, outbox, clock


def add_pod(sched: Scheduler, name: str, **kw: Any) -> Pod:
    pod = pod_from_dict(make_pod(name, requests={"cpu": "1"}, **kw))
    sched.inbox.put(kev.Upserted("pods", pod))
    return pod


def drain(sched: Scheduler) -> None:
    sched.run(until=lambda s: len(s.inbox) == 0 and s.queue.pending()["active"] == 0)


def bind_ok(sched: Scheduler, outbox: RecordingOutbox, error: Exception | None = None) -> None:
    for pod, node in outbox.binds:
        sched.inbox.put(BindDone(pod, node, error))
    drain(sched)


def test_points_run_in_upstream_order_with_post_bind_after_the_bind() -> None:
    sched, outbox, _ = harness(Recorder, Second)
    add_pod(sched, "a")
    drain(sched)
    assert LOG == [
        "Recorder.reserve(a)",
        "Second.reserve(a)",
        "Recorder.permit(a)",
        "Second.permit(a)",
        "Recorder.pre_bind(a)",
        "Second.pre_bind(a)",
    ]
    assert outbox.bound() == ["a"]
    bind_ok(sched, outbox)
    assert LOG[-2:] == ["Recorder.post_bind(a)", "Second.post_bind(a)"]
    assert sched.scheduled_count == 1


def test_reserve_rejection_unreserves_all_in_reverse_and_forgets() -> None:
    sched, outbox, _ = harness(Recorder, Second)
    BEHAVIOUR["Second.reserve"] = api.unschedulable("no licence left")
    pod = add_pod(sched, "a")
    drain(sched)
    assert LOG == [
        "Recorder.reserve(a)",
        "Second.reserve(a)",
        "Second.unreserve(a)",
        "Recorder.unreserve(a)",
    ]
    assert outbox.binds == []
    assert pod.uid not in sched.cache
    cond = outbox.condition("a")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("Unschedulable", "0/1 nodes are available: no licence left.")
    assert sched.queue.get(pod.uid).unschedulable_plugins == {"Second"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("point", "act", "message"),
    [
        pytest.param(
            "reserve", RuntimeError("boom"), 'running Reserve plugin "Recorder": boom', id="reserve raises"
        ),
        pytest.param(
            "reserve",
            "yes",
            'running Reserve plugin "Recorder": invalid result: reserve returned str',
            id="bad type",
        ),
        pytest.param("permit", KeyError("k"), "running Permit plugin \"Recorder\": 'k'", id="permit raises"),
        pytest.param(
            "pre_bind",
            api.error("volume not ready"),
            'running PreBind plugin "Recorder": volume not ready',
            id="pre_bind error",
        ),
    ],
)
def test_binding_cycle_errors_become_scheduler_errors(point: str, act: Any, message: str) -> None:
    sched, outbox, _ = harness(Recorder)

    def behave(pod: api.Pod) -> Any:
        if isinstance(act, Exception):
            raise act
        return act

    BEHAVIOUR[f"Recorder.{point}"] = behave
    pod = add_pod(sched, "a")
    drain(sched)
    assert outbox.binds == []
    assert "Recorder.unreserve(a)" in LOG
    assert pod.uid not in sched.cache
    cond = outbox.condition("a")
    assert cond is not None and cond["reason"] == "SchedulerError"
    assert cond["message"].startswith(message)
    # The scheduler is still running: the next pod binds.
    BEHAVIOUR.clear()
    add_pod(sched, "b")
    drain(sched)
    assert outbox.bound() == ["b"]


def test_permit_wait_then_allow_binds_without_blocking_other_pods() -> None:
    sched, outbox, _ = harness(Recorder)
    BEHAVIOUR["Recorder.permit"] = lambda p: (api.wait(), 30) if p.name == "a" else None
    a = add_pod(sched, "a")
    add_pod(sched, "b")
    drain(sched)
    assert outbox.bound() == ["b"]  # a waits, b went on
    assert a.uid in sched.cache and sched.cache.is_assumed(a.uid)
    wp = BEHAVIOUR["handle"].get_waiting_pod(a.uid)
    assert wp is not None and wp.pending_plugins == ["Recorder"]
    wp.allow("Recorder")
    drain(sched)
    assert outbox.bound() == ["b", "a"]
    assert BEHAVIOUR["handle"].get_waiting_pod(a.uid) is None


def test_permit_waits_for_every_plugin_that_asked() -> None:
    sched, outbox, _ = harness(Recorder, Second)
    BEHAVIOUR["Recorder.permit"] = (api.wait(), 30)
    BEHAVIOUR["Second.permit"] = (api.wait(), 30)
    a = add_pod(sched, "a")
    drain(sched)
    wp = BEHAVIOUR["handle"].get_waiting_pod(a.uid)
    wp.allow("Recorder")
    drain(sched)
    assert outbox.binds == []
    wp.allow("Second")
    drain(sched)
    assert outbox.bound() == ["a"]


def test_waiting_pod_rejected_is_unreserved_forgotten_and_unschedulable() -> None:
    sched, outbox, _ = harness(Recorder)
    BEHAVIOUR["Recorder.permit"] = (api.wait(), 30)
    a = add_pod(sched, "a")
    drain(sched)
    BEHAVIOUR["handle"].get_waiting_pod(a.uid).reject("Recorder", "gang incomplete")
    drain(sched)
    assert outbox.binds == []
    assert LOG[-1] == "Recorder.unreserve(a)"
    assert a.uid not in sched.cache
    cond = outbox.condition("a")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("Unschedulable", "0/1 nodes are available: gang incomplete.")


def test_permit_timeout_rejects_with_upstreams_message() -> None:
    sched, outbox, clock = harness(Recorder)
    BEHAVIOUR["Recorder.permit"] = (api.wait(), 5)
    a = add_pod(sched, "a")
    drain(sched)
    clock.t += 4
    sched.binding_cycle.expire(clock.t)  # what the loop does on every step
    drain(sched)
    assert sched.cache.is_assumed(a.uid)
    clock.t += 2
    sched.binding_cycle.expire(clock.t)
    drain(sched)
    assert a.uid not in sched.cache
    cond = outbox.condition("a")
    assert cond is not None
    assert cond["message"] == (
        "0/1 nodes are available: rejected due to timeout after waiting 5s at plugin Recorder."
    )
    reg = sched.metrics.registry  # type: ignore[union-attr]
    assert (
        reg.get_sample_value("scheduler_permit_wait_duration_seconds_count", {"result": "Unschedulable"}) == 1
    )


def test_failed_bind_unreserves() -> None:
    sched, outbox, _ = harness(Recorder)
    a = add_pod(sched, "a")
    drain(sched)
    bind_ok(sched, outbox, error=RuntimeError("409"))
    assert LOG[-1] == "Recorder.unreserve(a)"
    assert a.uid not in sched.cache


def test_plugin_that_raises_gets_scheduler_error_and_scheduler_continues() -> None:
    sched, outbox, _ = harness(Exploding)
    add_pod(sched, "bad-1")
    add_pod(sched, "good-1")
    drain(sched)
    assert outbox.bound() == ["good-1"]
    cond = outbox.condition("bad-1")
    assert cond is not None
    assert cond["reason"] == "SchedulerError"
    assert cond["message"] == 'running "Exploding" filter plugin: division by zero'
    reg = sched.metrics.registry  # type: ignore[union-attr]
    labels = {"plugin": "Exploding", "extension_point": "Filter"}
    assert reg.get_sample_value("ksched_plugin_errors_total", labels) == 1


def test_deleted_waiting_pod_is_rejected_and_unreserved() -> None:
    sched, outbox, _ = harness(Recorder)
    BEHAVIOUR["Recorder.permit"] = (api.wait(), 30)
    a = add_pod(sched, "a")
    drain(sched)
    assert sched.binding_cycle.waiting == 1
    sched.inbox.put(kev.Deleted("pods", a))
    drain(sched)
    assert sched.binding_cycle.waiting == 0
    assert LOG[-1] == "Recorder.unreserve(a)"
    assert outbox.binds == []
    assert a.uid not in sched.cache


class Pending:
    """A PendingPreBind the test resolves by hand (``outcome``), or that raises when polled."""

    def __init__(self, next_at: float = float("inf")) -> None:
        self.outcome: Any = None
        self.next_at = next_at
        self.wake: Any = None
        self.polls: list[float] = []

    def set_waker(self, wake: Any) -> None:
        self.wake = wake

    def poll(self, now: float) -> Any:
        self.polls.append(now)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def next_poll_at(self) -> float:
        return self.next_at


def test_pending_pre_bind_resumes_with_the_next_plugin_once_woken() -> None:
    sched, outbox, _ = harness(Recorder, Second)
    pending = Pending()
    BEHAVIOUR["Recorder.pre_bind"] = lambda p: pending if p.name == "a" else None
    a = add_pod(sched, "a")
    add_pod(sched, "b")
    drain(sched)
    assert outbox.bound() == ["b"] and sched.cache.is_assumed(a.uid)
    assert "Second.pre_bind(a)" not in LOG
    pending.outcome = api.SUCCESS
    pending.wake()  # from any thread: a PreBindProgress in the inbox
    drain(sched)
    sched.binding_cycle.poll(sched.clock())
    assert LOG.index("Second.pre_bind(a)") > LOG.index("Recorder.pre_bind(a)")
    assert outbox.bound() == ["b", "a"]


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        pytest.param(api.error("volume gone"), 'running PreBind plugin "Recorder": volume gone', id="error"),
        pytest.param(
            RuntimeError("poll broke"), 'running PreBind plugin "Recorder": poll broke', id="raises"
        ),
        pytest.param(
            "done", "running PreBind plugin \"Recorder\": returned 'done', expected a Status", id="bad"
        ),
    ],
)
def test_pending_pre_bind_failure_unreserves_and_reports(outcome: Any, message: str) -> None:
    sched, outbox, clock = harness(Recorder, Second)
    pending = Pending(next_at=clock.t + 5)
    BEHAVIOUR["Recorder.pre_bind"] = pending
    a = add_pod(sched, "a")
    drain(sched)
    assert sched.binding_cycle.next_deadline() == clock.t + 5
    pending.outcome = outcome
    clock.t += 5
    sched.binding_cycle.poll(clock.t)  # its next_poll_at came
    assert LOG[-2:] == ["Second.unreserve(a)", "Recorder.unreserve(a)"]
    assert a.uid not in sched.cache and outbox.binds == []
    cond = outbox.condition("a")
    assert cond is not None and (cond["reason"], cond["message"]) == ("SchedulerError", message)


def test_pre_bind_pre_flight_skip_leaves_pre_bind_out_and_sets_no_nomination() -> None:
    class Flighted(Recorder):
        name = "Flighted"

        def pre_bind_pre_flight(self, state: api.CycleState, pod: api.Pod, node_name: str) -> api.Status:
            LOG.append(f"Flighted.pre_bind_pre_flight({pod.name})")
            return BEHAVIOUR.get("flight") or api.SKIP

    sched, outbox, _ = harness(Flighted)
    add_pod(sched, "a")
    drain(sched)
    assert "Flighted.pre_bind_pre_flight(a)" in LOG and "Flighted.pre_bind(a)" not in LOG
    assert outbox.bound() == ["a"]
    assert not [p for n, p in outbox.patches if "nominatedNodeName" in p["status"]]
    BEHAVIOUR["flight"] = api.SUCCESS
    add_pod(sched, "b")
    drain(sched)
    assert "Flighted.pre_bind(b)" in LOG
    assert ("b", {"status": {"nominatedNodeName": "n1"}}) in outbox.patches
    BEHAVIOUR["flight"] = api.unschedulable("no")
    add_pod(sched, "c")
    drain(sched)
    cond = outbox.condition("c")
    assert cond is not None and cond["message"] == (
        'PreBindPreFlight Flighted returned "Unschedulable", which is unsupported. '
        "It is supposed to return Success, Skip, or Error status"
    )
