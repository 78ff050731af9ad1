"""Applying informer events to the cache and the queue (the scheduler's event handlers).

Mirrors upstream's ``eventhandlers.go``: bound pods go to the cache (confirming assumed ones),
pending pods of our profiles go to the queue, and each change that could make a parked pod
schedulable is turned into a :class:`ClusterEvent` for the queue (node added or grown, labels or
taints changed, a bound pod deleted). A relist after 410 Gone reconciles: whatever the cache knows
and the list does not hold was deleted meanwhile.

Malformed objects never stop the loop: a pending pod of ours gets a ``FailedScheduling`` event
and a ``PodScheduled=False`` condition naming the field (once per distinct problem); a malformed
node is skipped with a logged error, keeping its last good version if there was one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from ksched.cache.cluster import ClusterCache
from ksched.cache.volumes import KINDS as STORAGE_KINDS
from ksched.framework.runtime import Framework
from ksched.kube import events as kev
from ksched.metrics import CycleHistogramChild, Metrics
from ksched.model import workloads as wl
from ksched.model.namespace import Namespace
from ksched.model.node import Node
from ksched.model.pod import DEFAULT_SCHEDULER_NAME, Pod
from ksched.scheduler import events_registry as cev
from ksched.scheduler.preemption import clear_nomination_patch, forget_nominations_to
from ksched.scheduler.queue import SchedulingQueue
from ksched.scheduler.reporting import (
    ACTION_SCHEDULING,
    EVENT_FAILED_SCHEDULING,
    REASON_SCHEDULING_GATED,
    Reporter,
)
from ksched.scheduler.storage_handlers import StorageEventHandlers

log = logging.getLogger(__name__)
WORKLOAD_KINDS: Mapping[str, str] = {
    "services": wl.SERVICE,
    "replicationcontrollers": wl.REPLICATION_CONTROLLER,
    "replicasets": wl.REPLICA_SET,
    "statefulsets": wl.STATEFUL_SET,
}
"""Informer resource -> kind of the objects PodTopologySpread's default selector is built from."""
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def node_update_events(old: Node, new: Node) -> list[cev.ClusterEvent]:
    """Upstream ``NodeSchedulingPropertiesChange``: which aspects of a node changed, in upstream's
    order. ``spec.unschedulable`` turning false counts as a taint change (and a taint change on
    top of it is a second one, as upstream sends it)."""
    A = cev.ActionType
    actions = []
    if old.unschedulable and not new.unschedulable:
        actions.append(A.UPDATE_NODE_TAINT)
    if old.allocatable != new.allocatable:
        actions.append(A.UPDATE_NODE_ALLOCATABLE)
    if old.labels != new.labels:
        actions.append(A.UPDATE_NODE_LABEL)
    if old.taints != new.taints:
        actions.append(A.UPDATE_NODE_TAINT)
    if dict(old.conditions) != dict(new.conditions):
        actions.append(A.UPDATE_NODE_CONDITION)
    if old.annotations_key != new.annotations_key:
        actions.append(A.UPDATE_NODE_ANNOTATION)
    return [cev.ClusterEvent(cev.NODE, a) for a in actions]


class ClusterEventHandlers:
    """State fed by informers; owned and called by the scheduling loop (its thread only)."""

    def __init__(
        self,
        *,
        cache: ClusterCache,
        queue: SchedulingQueue,
        profiles: Mapping[str, Framework],
        reporter: Reporter,
        pending: dict[str, Pod] | None = None,
        on_pod_deleted: Callable[[str], None] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``pending`` is the map to keep the pending pods in (shared with its readers; these
        handlers are its only writer); ``on_pod_deleted`` is told the uid of every deleted pod, for
        state kept outside the cache and the queue."""
        self.cache = cache
        self.queue = queue
        self.profiles = profiles
        self.reporter = reporter
        self.pending: dict[str, Pod] = pending if pending is not None else {}
        """Pending pods of our profiles, by uid: the informer's latest view."""
        self.namespaces: dict[str, Namespace] = {}
        self._reported_invalid: dict[str, str] = {}
        self._on_pod_deleted = on_pod_deleted
        self.storage = StorageEventHandlers(cache, queue)
        self._timer = EventTimer(metrics)

    def handle_informer_event(self, ev: kev.InformerEvent) -> None:
        if type(ev) is kev.Upserted and ev.kind == "pods":  # most events: a pod added or changed
            self._pod_upserted(ev.obj)
            return
        if ev.kind in STORAGE_KINDS:
            self.storage.handle(ev)
            return
        if isinstance(ev, kev.Relisted):
            self._relist(ev)
            return
        if isinstance(ev, kev.Invalid):
            self._invalid(ev)
            return
        kind = ev.kind
        deleted = isinstance(ev, kev.Deleted)
        if kind == "pods":
            self._pod_deleted(ev.obj) if deleted else self._pod_upserted(ev.obj)
        elif kind == "nodes":
            self._node_deleted(ev.obj.name) if deleted else self._node_upserted(ev.obj)
        elif kind == "namespaces":
            if deleted:
                self.namespaces.pop(ev.obj.name, None)
            else:
                self.namespaces[ev.obj.name] = ev.obj
        elif kind == "poddisruptionbudgets":
            key = f"{ev.obj.namespace}/{ev.obj.name}"
            if deleted:
                self.cache.pdbs.pop(key, None)
            else:
                self.cache.pdbs[key] = ev.obj
        elif kind in WORKLOAD_KINDS:  # Services, RCs, RSs, StatefulSets: default spreading selectors
            if deleted:
                self.cache.selector_owners.delete(ev.obj)
            else:
                self.cache.selector_owners.upsert(ev.obj)

    # ------------------------------------------------------------------ nodes
    def _node_upserted(self, node: Node) -> None:
        started = time.perf_counter()
        old = self._node(node.name)
        self.cache.add_node(node)
        if old is None:
            self.queue.move_all_to_active_or_backoff(cev.NODE_ADD, new=node)
            self._timer.since(cev.NODE_ADD, started)
            return
        updated = time.perf_counter() - started
        for event in node_update_events(old, node):
            moving = time.perf_counter()
            self.queue.move_all_to_active_or_backoff(event, old=old, new=node)
            self._timer.observe(event, updated + time.perf_counter() - moving)

    def _node(self, name: str) -> Node | None:
        row = self.cache.nodes.row_of.get(name)
        return self.cache.nodes.nodes[row] if row is not None else None

    def _node_deleted(self, name: str) -> None:
        started = time.perf_counter()
        old = self._node(name)
        if old is not None:
            self.queue.move_all_to_active_or_backoff(cev.NODE_DELETE, old=old)
        self.cache.remove_node(name)
        for pod in forget_nominations_to(self.queue, name):  # a stale nomination, cleared in status too
            self.reporter.sink.patch_status(self.pending.get(pod.uid, pod), clear_nomination_patch())
        self._timer.since(cev.NODE_DELETE, started)

    # ------------------------------------------------------------------ pods
    def _ours(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.profiles

    def _pod_upserted(self, pod: Pod) -> None:
        uid = pod.uid
        self._reported_invalid.pop(uid, None)
        if pod.node_name:
            self._assigned_pod_upserted(pod)
            return
        if not self._ours(pod):
            return
        started = time.perf_counter()
        if pod.deleting:
            old = self.pending.pop(uid, None)
            if old is not None:
                self.queue.delete(uid)
                self._nominated_pod_gone(old)
            self._timer.since(cev.UNSCHEDULED_POD_DELETE, started)
            return
        old = self.pending.get(uid)
        self.pending[uid] = pod
        if uid in self.cache.pods:  # assumed: its binding is in flight; the queue must not see it again
            return
        if old is None:
            pinfo = self.queue.add(pod)
            if pinfo is not None and pinfo.gated:
                self.reporter.not_scheduled(pod, REASON_SCHEDULING_GATED, GATED_MESSAGE)
            self._timer.since(cev.UNSCHEDULED_POD_ADD, started)
            return
        events = cev.pod_update_events(old, pod)
        self.queue.update(old, pod, events)
        if old.nominated_node_name and old.nominated_node_name != pod.nominated_node_name:
            self._nominated_pod_gone(old)  # as if deleted from its old nominated node
        # Upstream times every pending-pod update as UnschedulablePodUpdate, and also under each
        # more specific event it derived.
        self._timer.since(cev.UNSCHEDULED_POD_UPDATE, started)
        for event in events:
            if event != cev.UNSCHEDULED_POD_UPDATE:
                self._timer.since(event, started)

    def _assigned_pod_upserted(self, pod: Pod) -> None:
        """A bound pod added (or our binding confirmed: ``AssignedPodAdd``) or updated (the
        ``AssignedPod/Update*`` events its change derives, with the old and new pod)."""
        started = time.perf_counter()
        uid = pod.uid
        if self.pending.pop(uid, None) is not None:
            self.queue.delete(uid)
        entry = self.cache.pods.get(uid)
        old = entry.pod if entry is not None and not self.cache.is_assumed(uid) else None
        self.cache.add_pod(pod)
        if old is None:
            self.queue.move_all_to_active_or_backoff(cev.ASSIGNED_POD_ADD, new=pod)
            self._timer.since(cev.ASSIGNED_POD_ADD, started)
            return
        updated = time.perf_counter() - started
        for event in cev.pod_update_events(old, pod):
            moving = time.perf_counter()
            self.queue.move_all_to_active_or_backoff(event, old=old, new=pod)
            self._timer.observe(event, updated + time.perf_counter() - moving)

    def _nominated_pod_gone(self, pod: Pod) -> None:
        """Upstream: a nominated pod deleted, or nominated elsewhere, frees what lower- or
        equal-priority pods counted as taken on its node (``AssignedPodDelete`` for them only)."""
        if pod.nominated_node_name:
            priority = pod.priority
            self.queue.move_all_to_active_or_backoff(
                cev.ASSIGNED_POD_DELETE, lambda p: p.priority <= priority, old=pod
            )

    def _pod_deleted(self, pod: Pod) -> None:
        started = time.perf_counter()
        uid = pod.uid
        pending = self.pending.pop(uid, None)
        if pending is not None:
            self.queue.delete(uid)
        entry = self.cache.pods.get(uid)
        if entry is not None:  # bound, or assumed: what it held is free
            self.cache.remove_pod(uid)
            self.queue.move_all_to_active_or_backoff(cev.ASSIGNED_POD_DELETE, old=entry.pod)
            self._timer.since(cev.ASSIGNED_POD_DELETE, started)
        elif pending is not None:
            self._nominated_pod_gone(pending)
            self._timer.since(cev.UNSCHEDULED_POD_DELETE, started)
        self._reported_invalid.pop(uid, None)
        if self._on_pod_deleted is not None:
            self._on_pod_deleted(uid)

    # ------------------------------------------------------------------ relist after 410
    def _relist(self, ev: kev.Relisted) -> None:
        invalid_keys = {i.key for i in ev.invalid}
        if ev.kind == "nodes":
            live = {n.name for n in ev.objs} | invalid_keys
            for name in [n for n in self.cache.nodes.row_of if n not in live]:
                self._node_deleted(name)
            for node in ev.objs:
                self._node_upserted(node)
        elif ev.kind == "pods":
            live = {p.uid for p in ev.objs} | {i.uid for i in ev.invalid}
            for uid in [u for u in self.cache.pods if u not in live]:
                self._pod_deleted(self.cache.pods[uid].pod)
            for uid in [u for u in self.pending if u not in live]:
                self._pod_deleted(self.pending[uid])
            for pod in ev.objs:
                self._pod_upserted(pod)
        elif ev.kind == "namespaces":
            self.namespaces = {n.name: n for n in ev.objs}
        elif ev.kind == "poddisruptionbudgets":
            self.cache.pdbs.clear()
            self.cache.pdbs.update((f"{p.namespace}/{p.name}", p) for p in ev.objs)
        elif ev.kind in WORKLOAD_KINDS:
            self.cache.selector_owners.replace(WORKLOAD_KINDS[ev.kind], ev.objs)
        for bad in ev.invalid:
            self._invalid(bad)

    # ------------------------------------------------------------------ malformed objects
    def _invalid(self, ev: kev.Invalid) -> None:
        if ev.kind == "nodes":
            if ev.event_type == "DELETED":
                self._node_deleted(ev.name)
            else:
                log.error("node %s skipped: %s", ev.name, ev.error)
            return
        if ev.kind != "pods":
            log.error("%s %s skipped: %s", ev.kind, ev.key, ev.error)
            return
        if ev.event_type == "DELETED":
            if ev.uid in self.pending:
                self._pod_deleted(self.pending[ev.uid])
            elif ev.uid in self.cache.pods:
                self._pod_deleted(self.cache.pods[ev.uid].pod)
            return
        if ev.raw_node_name:
            log.error("bound pod %s cannot be read, keeping its last good version: %s", ev.key, ev.error)
            return
        scheduler = ev.raw_scheduler_name or DEFAULT_SCHEDULER_NAME
        if scheduler not in self.profiles:
            return
        if ev.uid in self.pending:  # it was valid before: it cannot be scheduled now
            self.queue.delete(ev.uid)
            del self.pending[ev.uid]
        message = str(ev.error)
        if self._reported_invalid.get(ev.uid) == message:
            return
        self._reported_invalid[ev.uid] = message
        log.warning("pod %s cannot be scheduled: %s", ev.key, message)
        stub = _PodRef(ev.namespace, ev.name, ev.uid)
        self.reporter.event(stub, scheduler, "Warning", EVENT_FAILED_SCHEDULING, ACTION_SCHEDULING, message)
        self.reporter.not_scheduled_unparsed(stub, message)


class EventTimer:
    """``scheduler_event_handling_duration_seconds{event}``: how long handling one cluster event
    took, cache update and queue moves together, with the children memoized (every informer
    event records one). Without metrics it records nothing."""

    __slots__ = ("_children", "_histogram")

    def __init__(self, metrics: Metrics | None) -> None:
        self._histogram = metrics.event_handling_duration if metrics is not None else None
        self._children: dict[str, CycleHistogramChild] = {}

    def observe(self, event: cev.ClusterEvent, seconds: float) -> None:
        if self._histogram is None:
            return
        label = event.label
        child = self._children.get(label)
        if child is None:
            child = self._children[label] = self._histogram.labels(label)
        child.observe(seconds)

    def since(self, event: cev.ClusterEvent, started: float) -> None:
        self.observe(event, time.perf_counter() - started)


class _PodRef:
    """Just enough of a pod to address events and patches for one that could not be parsed."""

    __slots__ = ("key", "name", "namespace", "uid")

    def __init__(self, namespace: str, name: str, uid: str) -> None:
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.key = f"{namespace}/{name}"
