"""The loop's side of preemption, fed through the inbox with a recording outbox: no threads, no HTTP.

The PostFilter decision comes from a scripted stand-in registered as ``DefaultPreemption`` (the real
plugin's choices are tested with the plugin); these tests check what the loop does with it: the
nomination in the queue and in ``status.nominatedNodeName``, the FailedScheduling text, the job
handed to the outbox (upstream's exact condition and event texts), the preemptor's release, and
clearing stale nominations. :func:`carry_out` is run against a fake API for the eviction order
and the 404 / 409 / error cases (upstream ``executor.go``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import generate_latest

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.errors import ApiError, Conflict, NotFound
from ksched.framework.interface import Code, PostFilterResult, Status
from ksched.framework.profile import build_profiles
from ksched.framework.registry import Registry
from ksched.kube import events as kev
from ksched.metrics import FrameworkMetrics, Metrics
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.inbox import BindDone
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.preemption import (
    PreemptionDone,
    PreemptionJob,
    carry_out,
    disruption_message,
    preempted_note,
)
from ksched.scheduler.queue.factory import queue_for
from tests.builders import make_node, make_pod
from tests.unit.scheduler.loop_support import FakeClock, RecordingOutbox

WAITING = "waiting for the preemption for this pod to be finished"


class ScriptedPreemption:
    """Stands in for DefaultPreemption: answers what the test scripts, holds preemptors back."""

    name = "DefaultPreemption"

    def __init__(self) -> None:
        self.script: Callable[[Pod, ClusterCache], PostFilterResult] = evict_everything_lower
        self.preempting: set[str] = set()
        self.calls = 0

    def post_filter(self, state: Any, pod: Pod, cluster: ClusterCache, result: Any, nominated: Any) -> Any:
        self.calls += 1
        return self.script(pod, cluster)

    def pre_enqueue(self, pod: Pod) -> Status:
        if pod.uid in self.preempting:
            return Status(Code.UNSCHEDULABLE, (WAITING,))
        return Status()

    def mark_preempting(self, uid: str) -> None:
        self.preempting.add(uid)

    def done_preempting(self, uid: str) -> None:
        self.preempting.discard(uid)


def evict_everything_lower(pod: Pod, cluster: ClusterCache) -> PostFilterResult:
    """Nominate the first node (by name) holding lower-priority pods; they all become victims."""
    for name in sorted(cluster.nodes.row_of):
        victims = tuple(p for p in cluster.pods_on(name) if p.priority < pod.priority)
        if victims:
            return PostFilterResult(nominated_node=name, victims=victims)
    return PostFilterResult(status=Status(Code.UNSCHEDULABLE, ("0/1 nodes are available.",)))


@dataclasses.dataclass
class Harness:
    sched: Scheduler
    outbox: RecordingOutbox
    clock: FakeClock
    plugin: ScriptedPreemption
    metrics: Metrics

    def drain(self) -> None:
        s = self.sched
        s.run(until=lambda s: len(s.inbox) == 0 and s.queue.pending()["active"] == 0)

    def put(self, item: Any) -> None:
        self.sched.inbox.put(item)

    def metric(self, name: str) -> str:
        assert self.metrics.registry is not None
        text = generate_latest(self.metrics.registry).decode()
        return "\n".join(line for line in text.splitlines() if line.startswith(name))


@pytest.fixture
def h() -> Harness:
    clock = FakeClock()
    outbox = RecordingOutbox()
    plugin = ScriptedPreemption()
    config = default_config()
    metrics = Metrics()
    profiles = build_profiles(
        config,
        seed=3,
        registry=Registry(extra={"DefaultPreemption": lambda a, h: plugin}),
        recorder=FrameworkMetrics(metrics),
    )
    queue = queue_for(config, profiles, clock=clock)
    sched = Scheduler(
        profiles=profiles,
        cache=ClusterCache(),
        queue=queue,
        outbox=outbox,  # type: ignore[arg-type]
        clock=clock,
        wall_clock=clock,
        metrics=metrics,
    )
    for kind in ("nodes", "pods"):
        sched.inbox.put(kev.Synced(kind))
    return Harness(sched, outbox, clock, plugin, metrics)


def node(name: str, cpu: str = "2") -> kev.Upserted:
    return kev.Upserted("nodes", node_from_dict(make_node(name, cpu=cpu, memory="8Gi", pods=10)))


def pod(name: str, cpu: str = "1", **kw: Any) -> Pod:
    return pod_from_dict(make_pod(name, uid=f"uid-{name}", requests={"cpu": cpu}, **kw))


def running(name: str, node_name: str, cpu: str = "1", **kw: Any) -> kev.Upserted:
    return kev.Upserted("pods", pod(name, cpu, node_name=node_name, **kw))


def with_status(p: Pod, **status: Any) -> Pod:
    return dataclasses.replace(p, **status)


def test_preemptor_is_nominated_and_its_victims_handed_to_the_outbox(h: Harness) -> None:
    h.put(node("n1"))
    h.put(running("low-a", "n1", priority=1))
    h.put(running("low-b", "n1", priority=2))
    high = pod("high", cpu="2", priority=100)
    h.put(kev.Upserted("pods", high))
    h.drain()

    assert h.plugin.calls == 1
    [job] = h.outbox.jobs
    assert (job.preemptor.uid, job.node) == (high.uid, "n1")
    assert sorted(e.victim.name for e in job.evictions) == ["low-a", "low-b"]
    for e in job.evictions:
        [cond] = e.condition_patch["status"]["conditions"]
        assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
            "DisruptionTarget",
            "True",
            "PreemptionByScheduler",
            "default-scheduler: preempting to accommodate a higher priority pod",
        )
        ev = e.event
        assert (ev["reason"], ev["action"], ev["type"], ev["note"]) == (
            "Preempted",
            "Preempting",
            "Normal",
            f"Preempted by pod {high.uid} on node n1",
        )
        assert ev["regarding"]["name"] == e.victim.name and ev["related"]["uid"] == high.uid
        assert ev["reportingController"] == "default-scheduler"
    # The nomination: in the nominator now, and in status together with PodScheduled=False.
    assert h.sched.queue.nominator.node_of(high.uid) == "n1"
    [status] = h.outbox.status_of("high")
    assert status["nominatedNodeName"] == "n1"
    assert status["conditions"][0]["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    # Held back while the evictions run, released (not activated) when they end.
    assert h.plugin.preempting == {high.uid}
    assert "scheduler_preemption_attempts_total 1.0" in h.metric("scheduler_preemption_attempts_total")
    assert 'scheduler_preemption_victims_bucket{le="2.0"} 1.0' in h.metric("scheduler_preemption_victims")
    h.put(PreemptionDone(high, "n1"))
    h.drain()
    assert h.plugin.preempting == set()
    assert h.sched.queue.pending()["unschedulable"] == 1


def test_victims_gone_retry_the_preemptor_onto_its_nominated_node(h: Harness) -> None:
    h.put(node("n1"))
    h.put(node("n2", cpu="1"))
    low = pod("low", cpu="2", priority=0, node_name="n1")
    h.put(kev.Upserted("pods", low))
    high = pod("high", cpu="2", priority=10)
    h.put(kev.Upserted("pods", high))
    h.drain()
    assert [j.node for j in h.outbox.jobs] == ["n1"]
    h.put(PreemptionDone(high, "n1"))
    h.put(kev.Upserted("pods", with_status(high, nominated_node_name="n1"), "MODIFIED"))
    h.put(kev.Deleted("pods", low))
    h.clock.t += 20  # past the backoff
    h.sched.run(until=lambda s: bool(h.outbox.binds))
    assert [(p.name, n) for p, n in h.outbox.binds] == [("high", "n1")]
    # Assumed: no longer nominated (upstream deletes the nomination on assume).
    assert h.sched.queue.nominator.node_of(high.uid) is None
    # Bound: the nomination left in its status is cleared.
    h.put(BindDone(with_status(high, nominated_node_name="n1"), "n1"))
    h.drain()
    assert {"nominatedNodeName": None} in h.outbox.status_of("high")


def test_a_victim_deleted_during_the_preemption_parks_then_activates_the_preemptor(h: Harness) -> None:
    # The deletion arrives before the API work ends: PreEnqueue holds the pod back (gated); the
    # end of the work must let it go, or it would wait for an event that already came.
    h.put(node("n1"))
    low = pod("low", cpu="2", node_name="n1")
    h.put(kev.Upserted("pods", low))
    high = pod("high", cpu="2", priority=10)
    h.put(kev.Upserted("pods", high))
    h.drain()
    h.put(kev.Deleted("pods", low))
    h.drain()
    pinfo = h.sched.queue.get(high.uid)
    assert pinfo is not None and pinfo.gating_plugin == "DefaultPreemption"
    h.put(PreemptionDone(high, "n1"))
    h.clock.t += 20
    h.sched.run(until=lambda s: bool(h.outbox.binds))
    assert [(p.name, n) for p, n in h.outbox.binds] == [("high", "n1")]


def test_a_failed_preemption_activates_the_preemptor(h: Harness) -> None:
    h.put(node("n1"))
    h.put(running("low", "n1", cpu="2"))
    high = pod("high", cpu="2", priority=10)
    h.put(kev.Upserted("pods", high))
    h.drain()
    assert h.sched.queue.pending()["unschedulable"] == 1
    h.put(PreemptionDone(high, "n1", ApiError(500, "InternalError", "boom")))
    h.drain()  # activated: tried again at once (and preempts again, the victim still being there)
    assert h.plugin.calls == 2
    text = h.metric("scheduler_preemption_goroutines")
    assert 'scheduler_preemption_goroutines_execution_total{result="error"} 1.0' in text
    assert 'scheduler_preemption_goroutines_duration_seconds_count{result="error"} 1.0' in text


def test_keep_nomination_leaves_it_and_no_candidates_clears_it(h: Harness) -> None:
    h.put(node("n1"))
    h.put(running("low", "n1", cpu="2", priority=50))
    high = with_status(pod("high", cpu="2", priority=10), nominated_node_name="n1")
    h.plugin.script = lambda p, c: PostFilterResult(
        status=Status(Code.UNSCHEDULABLE, ("not eligible due to a terminating pod on the nominated node.",)),
        keep_nomination=True,
    )
    h.put(kev.Upserted("pods", high))
    h.drain()
    assert h.sched.queue.nominator.node_of(high.uid) == "n1"
    [status] = h.outbox.status_of("high")
    assert "nominatedNodeName" not in status
    assert status["conditions"][0]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    assert h.outbox.jobs == []

    fit = "0/1 nodes are available: 1 No preemption victims found for incoming pod."
    h.plugin.script = lambda p, c: PostFilterResult(status=Status(Code.UNSCHEDULABLE, (fit,)))
    h.sched.queue.activate([high.uid])
    h.drain()
    assert h.sched.queue.nominator.node_of(high.uid) is None
    last = h.outbox.status_of("high")[-1]
    assert last["nominatedNodeName"] is None
    reasons = [(e["reason"], e["note"]) for e in h.outbox.events]
    assert ("FailedScheduling", f"0/1 nodes are available: 1 Insufficient cpu. preemption: {fit}") in reasons


def test_terminating_victims_are_not_deleted_again(h: Harness) -> None:
    h.put(node("n1"))
    low = pod("low", cpu="2", node_name="n1")
    h.put(kev.Upserted("pods", dataclasses.replace(low, deleting=True)))
    h.put(kev.Upserted("pods", pod("high", cpu="2", priority=10)))
    h.drain()
    assert h.outbox.jobs == [] and h.plugin.preempting == set()
    assert h.sched.queue.nominator.node_of("uid-high") == "n1"  # still nominated: it waits for them
    assert "scheduler_preemption_victims_count 0.0" in h.metric("scheduler_preemption_victims")


def test_lower_priority_nominations_on_the_node_are_cleared(h: Harness) -> None:
    h.put(node("n1", cpu="4"))
    h.put(running("low", "n1", cpu="4", priority=0))
    mid = with_status(pod("mid", cpu="1", priority=5), nominated_node_name="n1")
    h.plugin.script = lambda p, c: PostFilterResult(
        status=Status(Code.UNSCHEDULABLE, ("x",)), keep_nomination=True
    )
    h.put(kev.Upserted("pods", mid))
    h.drain()
    assert h.sched.queue.nominator.node_of(mid.uid) == "n1"
    h.plugin.script = evict_everything_lower
    h.put(kev.Upserted("pods", pod("high", cpu="4", priority=10)))
    h.drain()
    [job] = h.outbox.jobs
    assert [p.name for p in job.clear_nominations] == ["mid"]


def test_nominations_to_a_deleted_node_are_cleared(h: Harness) -> None:
    h.put(node("n1"))
    h.put(node("n2", cpu="1"))
    high = with_status(pod("high", cpu="2", priority=10), nominated_node_name="n1")
    h.plugin.script = lambda p, c: PostFilterResult(status=Status(Code.UNSCHEDULABLE), keep_nomination=True)
    h.put(running("low", "n1", cpu="2"))
    h.put(kev.Upserted("pods", high))
    h.drain()
    assert h.sched.queue.nominator.node_of(high.uid) == "n1"
    h.put(kev.Deleted("nodes", node_from_dict(make_node("n1", cpu="2", memory="8Gi", pods=10))))
    h.drain()
    assert h.sched.queue.nominator.node_of(high.uid) is None
    assert h.outbox.status_of("high")[-1] == {"nominatedNodeName": None}


def test_negative_priorities_preempt_and_are_preempted(h: Harness) -> None:
    h.put(node("n1"))
    h.put(running("lowest", "n1", cpu="2", priority=-100))
    neg = pod("neg", cpu="2", priority=-5)
    h.put(kev.Upserted("pods", neg))
    h.drain()
    [job] = h.outbox.jobs
    assert job.preemptor.priority == -5 and [e.victim.name for e in job.evictions] == ["lowest"]


def test_errors_and_a_profile_without_postfilter_clear_the_nomination(h: Harness) -> None:
    h.plugin.script = lambda p, c: PostFilterResult(status=Status(Code.ERROR, ("boom",)))
    h.put(node("n1", cpu="1"))
    high = with_status(pod("high", cpu="2", priority=10), nominated_node_name="n1")
    h.put(kev.Upserted("pods", high))
    h.drain()
    # A PostFilter error leaves the nomination (upstream: nil result) ...
    assert h.sched.queue.nominator.node_of(high.uid) == "n1"
    assert "nominatedNodeName" not in h.outbox.status_of("high")[-1]
    # ... a failed binding clears it (upstream clearNominatedNode).
    h.plugin.script = evict_everything_lower
    h.put(node("n2", cpu="4"))
    h.clock.t += 20
    h.sched.run(until=lambda s: bool(h.outbox.binds))
    h.put(BindDone(high, "n2", Conflict(409, "Conflict", "injected")))
    h.drain()
    assert h.sched.queue.nominator.node_of(high.uid) is None
    assert h.outbox.status_of("high")[-1]["nominatedNodeName"] is None


def test_upstream_texts() -> None:
    assert disruption_message("my-sched") == "my-sched: preempting to accommodate a higher priority pod"
    assert preempted_note("abc-123", "node-7") == "Preempted by pod abc-123 on node node-7"


# ---------------------------------------------------------------------------------------------- carry_out
class FakeApi:
    """Scripted answers per victim name; records the order of calls."""

    def __init__(
        self,
        patch_errors: dict[str, Exception] | None = None,
        delete_errors: dict[str, Exception] | None = None,
    ) -> None:
        self.patch_errors = patch_errors or {}
        self.delete_errors = delete_errors or {}
        self.calls: list[tuple[str, str]] = []
        self.events: list[str] = []
        self.gone: set[str] = set()

    async def patch_pod_status(self, pod: Pod, patch: Any) -> None:
        self.calls.append(("patch", pod.name))
        await asyncio.sleep(0)
        if pod.name in self.patch_errors:
            raise self.patch_errors[pod.name]

    async def delete_pod(self, pod: Pod) -> bool:
        self.calls.append(("delete", pod.name))
        await asyncio.sleep(0)
        if pod.name in self.gone:
            return False
        if pod.name in self.delete_errors:
            raise self.delete_errors[pod.name]
        return True

    def record_event(self, body: dict[str, Any]) -> None:
        self.events.append(body["regarding"]["name"])


def _job(*victims: str, clear: tuple[str, ...] = ()) -> PreemptionJob:
    from ksched.scheduler.preemption import Eviction

    evictions = tuple(Eviction(pod(v), {"status": {}}, {"regarding": {"name": v}}) for v in victims)
    return PreemptionJob(pod("high", priority=10), "n1", evictions, tuple(pod(c) for c in clear))


def _run(job: PreemptionJob, api: FakeApi) -> PreemptionDone:
    out: list[PreemptionDone] = []
    asyncio.run(carry_out(job, api, out.append))
    [done] = out
    return done


def test_carry_out_patches_then_deletes_each_victim_the_last_one_last() -> None:
    api = FakeApi()
    done = _run(_job("a", "b", "c", clear=("mid",)), api)
    assert done.error is None
    assert api.calls[0] == ("patch", "mid")
    for v in "abc":
        assert api.calls.index(("patch", v)) < api.calls.index(("delete", v))
    assert api.calls[-2:] == [("patch", "c"), ("delete", "c")]
    assert sorted(api.events) == ["a", "b", "c"]


def test_carry_out_victims_already_gone_are_fine_and_get_no_event() -> None:
    api = FakeApi(
        patch_errors={"a": NotFound(404, "NotFound", 'pods "a" not found')},
        delete_errors={"b": NotFound(404, "NotFound", "gone"), "c": Conflict(409, "Conflict", "uid")},
    )
    api.gone.add("d")  # the writer's answer for a 404 on DELETE
    done = _run(_job("a", "b", "c", "d", "e"), api)
    assert done.error is None
    assert ("delete", "a") not in api.calls
    assert api.events == ["e"]


def test_carry_out_an_error_skips_the_last_victim_and_is_reported() -> None:
    api = FakeApi(delete_errors={"a": ApiError(500, "InternalError", "boom")})
    done = _run(_job("a", "b", "c"), api)
    assert done.error is not None and "default/a" in str(done.error)
    assert ("patch", "c") not in api.calls
    assert api.events == ["b"]


def test_carry_out_a_single_victim_error_is_reported() -> None:
    api = FakeApi(patch_errors={"a": ApiError(500, "InternalError", "boom")})
    done = _run(_job("a"), api)
    assert done.error is not None and api.events == []


def test_a_victim_waiting_on_permit_is_rejected_not_deleted(h: Harness) -> None:
    h.put(node("n1"))
    h.put(running("waiter", "n1", priority=1))
    h.put(running("plain", "n1", priority=1))
    h.drain()
    fw = h.sched.profiles["default-scheduler"]
    waiting = fw.waiting_pods.add(pod("waiter", priority=1, node_name="n1"), "n1", {"SomePermit": 60.0})
    high = pod("high", cpu="2", priority=100)
    h.put(kev.Upserted("pods", high))
    h.drain()
    decision = waiting.decision
    assert decision is not None and decision.reasons == ("preempted",)
    assert decision.plugin == "DefaultPreemption"
    [job] = h.outbox.jobs
    assert [e.victim.name for e in job.evictions] == ["plain"]
    preempted = [e for e in h.outbox.events if e["reason"] == "Preempted"]
    assert [e["regarding"]["name"] for e in preempted] == ["waiter"]
    assert preempted[0]["note"] == f"Preempted by pod {high.uid} on node n1"


def test_a_preemptor_deleted_while_nominated_leaves_nothing_behind(h: Harness) -> None:
    h.put(node("n1"))
    h.put(running("low", "n1", priority=1))
    high = pod("high", cpu="2", priority=100)
    h.put(kev.Upserted("pods", high))
    h.drain()
    assert h.sched.preemption._written == {high.uid: "n1"}
    h.put(PreemptionDone(high, "n1"))
    h.put(kev.Deleted("pods", high))
    h.drain()
    assert h.sched.preemption._written == {}
    assert h.sched.queue.nominator.node_of(high.uid) is None
