"""A PreBind that waits without blocking the scheduling thread, in the loop: the default profile with
VolumeBinding and an in-memory API (:class:`FakeApi`), fed through the inbox, on a hand-moved clock.

The pod whose volumes must be bound stays assumed and parked while other pods are scheduled; its
binding is posted once the PV controller (the test) completes the claim; a timeout, an API error or
the pod's deletion fail it with upstream's message, unreserve (no assumption is left) and requeue it
with backoff; a replica that lost its lease posts nothing. Pods without claims skip the binding
cycle altogether.
"""

from __future__ import annotations

from typing import Any

from ksched.cache import volumes as vol
from ksched.cache.cluster import ClusterCache
from ksched.config import config_from_dict
from ksched.framework.handle import HandleServices
from ksched.framework.profile import build_profiles
from ksched.kube import events as kev
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import pv_from_dict, pvc_from_dict, storage_class_from_dict
from ksched.scheduler.inbox import BindDone, LeadershipChanged
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.queue.factory import queue_for
from ksched.scheduler.reporting import REASON_SCHEDULER_ERROR
from tests.builders import make_node, make_pod
from tests.storage_builders import claim_volume, make_pv, make_pvc, make_storage_class
from tests.unit.framework.plugins.volumebinding_support import FakeApi
from tests.unit.scheduler.loop_support import FakeClock, RecordingOutbox

HOST = "kubernetes.io/hostname"
PV = make_pv("pv-a", storage_class="local", capacity="10Gi", affinity={HOST: ["n1"]})
PVC = make_pvc("data", storage_class="local", request="1Gi")
PREBIND = 'running PreBind plugin "VolumeBinding": '
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {
                    "disabled": [
                        {"name": n} for n in ("VolumeRestrictions", "NodeVolumeLimits", "VolumeZone")
                    ]
                }
            },
        }
    ],
}
"""The default profile less the volume plugins still stubbed (they fail every pod with claims)."""


def harness(*, deliver: bool = True) -> tuple[Scheduler, RecordingOutbox, FakeClock, FakeApi]:
    clock = FakeClock()
    outbox = RecordingOutbox()
    cache = ClusterCache()
    api = FakeApi(cache, deliver=deliver)
    config = config_from_dict(CONFIG)
    profiles = build_profiles(config, seed=3, services=HandleServices(client=api))
    queue = queue_for(config, profiles, clock=clock)
    sched = Scheduler(
        profiles=profiles, cache=cache, queue=queue, outbox=outbox, clock=clock, wall_clock=clock
    )
    for kind in ("nodes", "pods"):
        sched.inbox.put(kev.Synced(kind))
    for name in ("n1", "n2"):
        labels = {HOST: name}
        sched.inbox.put(
            kev.Upserted(
                "nodes", node_from_dict(make_node(name, cpu=4, memory="8Gi", pods=10, labels=labels))
            )
        )
    sched.inbox.put(kev.Upserted(vol.STORAGE_CLASSES, storage_class_from_dict(make_storage_class("local"))))
    sched.inbox.put(kev.Upserted(vol.PERSISTENT_VOLUMES, pv_from_dict(PV)))
    sched.inbox.put(kev.Upserted(vol.PERSISTENT_VOLUME_CLAIMS, pvc_from_dict(PVC)))
    api.put_object(vol.PERSISTENT_VOLUMES, PV)
    api.put_object(vol.PERSISTENT_VOLUME_CLAIMS, PVC)
    return sched, outbox, clock, api


def add_pod(sched: Scheduler, name: str, *claims: str) -> Pod:
    pod = pod_from_dict(make_pod(name, requests={"cpu": "100m"}, volumes=[claim_volume(c) for c in claims]))
    sched.inbox.put(kev.Upserted("pods", pod))
    return pod


def drain(sched: Scheduler) -> None:
    """Run the loop until nothing is ready, its binding-cycle step included (``run(until=)``
    returns right after draining the inbox, before that step)."""
    while True:
        sched.run(until=lambda s: len(s.inbox) == 0 and s.queue.pending()["active"] == 0)
        if sched.stopping:
            return
        sched.binding_cycle.poll(sched.clock())
        if len(sched.inbox) == 0 and sched.queue.pending()["active"] == 0:
            return


def tick(sched: Scheduler, clock: FakeClock, seconds: float) -> None:
    """Move the clock and take one loop step's worth of binding-cycle work."""
    clock.t += seconds
    sched.binding_cycle.expire(clock.t)
    sched.binding_cycle.poll(clock.t)
    drain(sched)


def bind_claim(sched: Scheduler, api: FakeApi, pv_name: str = "pv-a") -> None:
    """The PV controller completes the claim; the informer brings the update."""
    raw = dict(api.objects[(vol.PERSISTENT_VOLUME_CLAIMS, "default/data")])
    raw["spec"] = {**raw["spec"], "volumeName": pv_name}
    annotations = {**(raw["metadata"].get("annotations") or {}), "pv.kubernetes.io/bind-completed": "yes"}
    raw["metadata"] = {**raw["metadata"], "annotations": annotations}
    api.cache = None  # the informer event below delivers it, through the inbox
    new = api.update(vol.PERSISTENT_VOLUME_CLAIMS, raw)
    sched.inbox.put(kev.Upserted(vol.PERSISTENT_VOLUME_CLAIMS, pvc_from_dict(new)))


def bound(outbox: RecordingOutbox) -> list[tuple[str, str]]:
    return [(p.name, n) for p, n in outbox.binds]


def last_condition(outbox: RecordingOutbox, name: str) -> dict[str, Any]:
    for pod, patch in reversed(outbox.patches):
        if pod == name and "conditions" in patch["status"]:
            return dict(patch["status"]["conditions"][0])
    raise AssertionError(f"no condition patched on {name}")


def assert_no_assumption(sched: Scheduler) -> None:
    assert list(sched.cache.volumes.pvs.assumed()) == []
    assert list(sched.cache.volumes.pvcs.assumed()) == []


def test_pending_pre_bind_parks_the_pod_and_the_loop_schedules_others() -> None:
    sched, outbox, clock, api = harness()
    a = add_pod(sched, "a", "data")
    drain(sched)
    assert api.requests == [("PUT", "/api/v1/persistentvolumes/pv-a")]
    assert list(sched.binding_cycle.pre_binding) == [a.uid]
    assert sched.cache.is_assumed(a.uid) and bound(outbox) == []
    assert ("a", {"status": {"nominatedNodeName": "n1"}}) in outbox.patches  # NominatedNodeNameForExpectation
    add_pod(sched, "b")
    drain(sched)
    assert bound(outbox) == [("b", "n1")] or bound(outbox) == [("b", "n2")]  # b did not wait for a
    # The loop sleeps no longer than the next poll: one second after the write answered.
    assert sched.binding_cycle.next_deadline() == clock.t + 1
    assert sched._idle_timeout(clock.t, None) == 1.0
    bind_claim(sched, api)
    drain(sched)
    tick(sched, clock, 1)
    assert ("a", "n1") in bound(outbox)
    assert sched.binding_cycle.pre_binding == {}
    for pod, node in list(outbox.binds):
        sched.inbox.put(BindDone(pod, node))
    drain(sched)
    assert sched.scheduled_count == 2


def test_pre_bind_timeout_unreserves_forgets_and_requeues_with_backoff() -> None:
    sched, outbox, clock, _ = harness()
    a = add_pod(sched, "a", "data")
    drain(sched)
    for _ in range(599):
        tick(sched, clock, 1)
    assert sched.cache.is_assumed(a.uid)  # still waiting, checked every second
    tick(sched, clock, 1)
    assert a.uid not in sched.cache and bound(outbox) == []
    assert_no_assumption(sched)
    cond = last_condition(outbox, "a")
    assert (cond["reason"], cond["message"]) == (
        REASON_SCHEDULER_ERROR,
        PREBIND + "binding volumes: context deadline exceeded",
    )
    pinfo = sched.queue.get(a.uid)
    assert pinfo is not None and pinfo.backoff_expiration is not None  # requeued with backoff
    events = [e["note"] for e in outbox.events if e["reason"] == "FailedScheduling"]
    assert events == [PREBIND + "binding volumes: context deadline exceeded"]


def test_api_error_fails_pre_bind_with_the_apis_message() -> None:
    sched, outbox, _, api = harness()
    api.objects[(vol.PERSISTENT_VOLUMES, "pv-a")]["metadata"]["resourceVersion"] = "9"  # someone else wrote
    a = add_pod(sched, "a", "data")
    drain(sched)
    assert a.uid not in sched.cache and bound(outbox) == []
    assert_no_assumption(sched)
    cond = last_condition(outbox, "a")
    assert cond["reason"] == REASON_SCHEDULER_ERROR
    assert cond["message"] == PREBIND + (
        'Operation cannot be fulfilled on persistentvolumes "pv-a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert sched.queue.get(a.uid) is not None


def test_pod_deleted_while_pending_fails_at_the_next_check_and_is_not_requeued() -> None:
    sched, outbox, clock, _ = harness()
    a = add_pod(sched, "a", "data")
    drain(sched)
    sched.inbox.put(kev.Deleted("pods", a))
    drain(sched)
    tick(sched, clock, 1)
    assert sched.binding_cycle.pre_binding == {} and bound(outbox) == []
    assert sched.queue.get(a.uid) is None
    assert_no_assumption(sched)
    notes = [e["note"] for e in outbox.events if e["reason"] == "FailedScheduling"]
    assert notes == [PREBIND + 'binding volumes: pod does not exist any more: pod "a" not found']


def test_no_binding_is_posted_after_the_lease_is_lost() -> None:
    sched, outbox, clock, api = harness()
    add_pod(sched, "a", "data")
    drain(sched)
    bind_claim(sched, api)
    drain(sched)
    sched.inbox.put(LeadershipChanged(False))
    drain(sched)
    assert sched.stopping
    tick(sched, clock, 1)  # even if the pending PreBind is polled and succeeds
    assert sched.binding_cycle.pre_binding == {}  # it did succeed
    assert bound(outbox) == []


def test_pods_without_claims_skip_the_binding_cycle() -> None:
    sched, outbox, _, _ = harness()
    fw = sched.profiles["default-scheduler"]
    assert fw.has_binding_plugins  # VolumeBinding reserves and pre-binds ...
    plain = add_pod(sched, "plain")
    with_claim = add_pod(sched, "claims", "data")
    assert not fw.needs_binding_cycle(plain)  # ... but only for pods with claims
    assert fw.needs_binding_cycle(with_claim)
    calls: list[str] = []
    real = sched.binding_cycle.start
    sched.binding_cycle.start = lambda fw, result, pinfo, *a: (
        calls.append(pinfo.pod.name),
        real(fw, result, pinfo, *a),
    )  # type: ignore[method-assign]
    drain(sched)
    assert calls == ["claims"]
    assert ("plain", "n1") in bound(outbox) or ("plain", "n2") in bound(outbox)
