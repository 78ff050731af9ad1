"""The cluster around the scheduler in the differential test: the API server and the controllers
that react to its decisions, at once and in the order of the calls.

It is the scheduler's :class:`~ksched.scheduler.binder.Outbox` and, for preemption, the
:class:`~ksched.scheduler.preemption.EvictionApi` that the production :func:`carry_out` drives, so
the victims are evicted in upstream's order by the real code. It keeps every pod as its raw API
dict, applies each write the way kube-apiserver would, and hands the resulting informer events to
``deliver`` (the scheduler's inbox):

- a binding sets ``spec.nodeName`` (the kubelet stand-in marks the pod Running with a start time)
  and yields a successful :class:`BindDone`, then the pod's ``MODIFIED`` event (a pod that is gone
  or already bound gets a failed one instead);
- a status patch is merged (conditions by ``type``, ``null`` deletes) and yields ``MODIFIED``;
- a preemption job patches and deletes its victims (``MODIFIED`` then ``DELETED``), then
  :class:`PreemptionDone`;
- the disruption controller stand-in recomputes ``disruptionsAllowed`` of the budgets covering a
  pod that was bound or deleted (``healthy - minAvailable``, all bound pods counting as healthy)
  and yields the budget's ``MODIFIED`` event when it changed.

Every write bumps one ``resourceVersion`` counter. Nothing here reads a clock but the fake one, and
nothing is asynchronous but :func:`carry_out`, run to completion on a private event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from ksched.errors import NotFound
from ksched.kube import events as kev
from ksched.model.node import node_from_dict
from ksched.model.pdb import pdb_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.inbox import BindDone
from ksched.scheduler.preemption import PreemptionJob, carry_out
from ksched.scheduler.reporting import EVENT_FAILED_SCHEDULING, rfc3339
from tests.differential.recording import BOUND, EVICTED, FAILED, NOMINATED, PREEMPTING, Recording

EVENT_PREEMPTED = "Preempted"


class SimulatedCluster:
    """See the module docstring. Called only from the thread that runs the scheduler."""

    def __init__(
        self, *, clock: Callable[[], float], deliver: Callable[[Any], None], recording: Recording
    ) -> None:
        self.clock = clock
        self.deliver = deliver
        self.recording = recording
        self.pods: dict[str, dict[str, Any]] = {}
        """uid -> raw pod, every pod that exists."""
        self.uids: dict[str, str] = {}
        """``namespace/name`` -> uid."""
        self.pdbs: dict[str, dict[str, Any]] = {}
        """``namespace/name`` -> raw budget."""
        self._bound: dict[tuple[str, frozenset[tuple[str, str]]], int] = {}
        """(namespace, label set) -> bound pods: what the budgets count."""
        self._version = 0

    # ---------------------------------------------------------------- the workload's own writes
    def add_node(self, raw: Mapping[str, Any]) -> None:
        node = {**raw, "metadata": {**raw["metadata"], "resourceVersion": self._next_version()}}
        self.deliver(kev.Upserted("nodes", node_from_dict(node)))

    def add_pdb(self, raw: Mapping[str, Any]) -> None:
        pdb = _own_copy(raw)
        meta = pdb["metadata"]
        self.pdbs[f"{meta['namespace']}/{meta['name']}"] = pdb
        self._recompute(pdb)
        meta["resourceVersion"] = self._next_version()
        self.deliver(kev.Upserted("poddisruptionbudgets", pdb_from_dict(pdb)))

    def add_pod(self, raw: Mapping[str, Any]) -> None:
        pod = _own_copy(raw)
        meta = pod["metadata"]
        meta["resourceVersion"] = self._next_version()
        self.pods[meta["uid"]] = pod
        self.uids[f"{meta['namespace']}/{meta['name']}"] = meta["uid"]
        self.deliver(kev.Upserted("pods", pod_from_dict(pod)))
        if pod["spec"].get("nodeName"):
            self._count_bound(pod, +1)

    def delete_pod_named(self, key: str) -> None:
        """A pod that completes or is deleted by its owner."""
        uid = self.uids.get(key)
        if uid is not None:
            self._delete(uid)

    # ---------------------------------------------------------------- Outbox
    def bind(self, pod: Pod, node: str) -> None:
        raw = self.pods.get(pod.uid)
        self.recording.add(pod.key, BOUND, node)
        if raw is None or raw["spec"].get("nodeName"):
            self.deliver(BindDone(pod, node, NotFound(404, "NotFound", f"pods {pod.name!r} not found")))
            return
        raw["spec"]["nodeName"] = node
        status = raw.setdefault("status", {})
        status["phase"] = "Running"
        status["startTime"] = rfc3339(self.clock())
        raw["metadata"]["resourceVersion"] = self._next_version()
        self.deliver(BindDone(pod, node))
        self.deliver(kev.Upserted("pods", pod_from_dict(raw), "MODIFIED"))
        self._count_bound(raw, +1)

    def patch_status(self, pod: Any, patch: dict[str, Any]) -> None:
        """Best effort, as the real outbox: a patch of a pod that is gone is dropped."""
        self.patch(pod, patch)

    def event(self, body: dict[str, Any]) -> None:
        if body["reason"] == EVENT_FAILED_SCHEDULING:
            regarding = body["regarding"]
            self.recording.add(f"{regarding['namespace']}/{regarding['name']}", FAILED, body["note"])

    def preempt(self, job: PreemptionJob) -> None:
        victims = [e.victim.key for e in job.evictions]
        self.recording.add(job.preemptor.key, PREEMPTING, job.node, victims)
        asyncio.run(carry_out(job, _Evictions(self), self.deliver))

    # ---------------------------------------------------------------- EvictionApi, through _Evictions
    def patch(self, pod: Any, patch: Mapping[str, Any]) -> bool:
        """Apply a status patch; False when the pod does not exist."""
        status = patch.get("status", {})
        if "nominatedNodeName" in status:
            self.recording.add(pod.key, NOMINATED, status["nominatedNodeName"] or "")
        raw = self.pods.get(pod.uid)
        if raw is None:
            return False
        _merge_status(raw.setdefault("status", {}), status)
        raw["metadata"]["resourceVersion"] = self._next_version()
        self.deliver(kev.Upserted("pods", pod_from_dict(raw), "MODIFIED"))
        return True

    def delete(self, pod: Pod) -> bool:
        if pod.uid not in self.pods:
            return False
        self._delete(pod.uid)
        return True

    def record_event(self, body: dict[str, Any]) -> None:
        if body["reason"] == EVENT_PREEMPTED:
            regarding, related = body["regarding"], body["related"]
            victim = f"{regarding['namespace']}/{regarding['name']}"
            self.recording.add(victim, EVICTED, f"{related['namespace']}/{related['name']}")

    # ---------------------------------------------------------------- internals
    def _delete(self, uid: str) -> None:
        raw = self.pods.pop(uid)
        meta = raw["metadata"]
        del self.uids[f"{meta['namespace']}/{meta['name']}"]
        self._next_version()
        self.deliver(kev.Deleted("pods", pod_from_dict(raw)))
        if raw["spec"].get("nodeName"):
            self._count_bound(raw, -1)

    def _count_bound(self, raw: Mapping[str, Any], delta: int) -> None:
        """A pod was bound (+1) or a bound one deleted (-1): the disruption controller's turn."""
        meta = raw["metadata"]
        labels = frozenset(meta["labels"].items())
        key = (meta["namespace"], labels)
        self._bound[key] = self._bound.get(key, 0) + delta
        for pdb in self.pdbs.values():
            if (
                pdb["metadata"]["namespace"] == meta["namespace"]
                and _selects(pdb, labels)
                and self._recompute(pdb)
            ):
                pdb["metadata"]["resourceVersion"] = self._next_version()
                self.deliver(kev.Upserted("poddisruptionbudgets", pdb_from_dict(pdb), "MODIFIED"))

    def _recompute(self, pdb: dict[str, Any]) -> bool:
        """Set ``status.disruptionsAllowed`` from the bound pods it selects; True when it changed."""
        namespace = pdb["metadata"]["namespace"]
        healthy = sum(
            n for (ns, labels), n in self._bound.items() if ns == namespace and _selects(pdb, labels)
        )
        allowed = max(0, healthy - int(pdb["spec"].get("minAvailable", 0)))
        if allowed == pdb["status"].get("disruptionsAllowed"):
            return False
        pdb["status"]["disruptionsAllowed"] = allowed
        return True

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)


def _selects(pdb: Mapping[str, Any], labels: frozenset[tuple[str, str]]) -> bool:
    """Whether the budget's ``matchLabels`` selector covers a pod with ``labels`` (no selector:
    none, as policy/v1 says; the workload uses no ``matchExpressions``)."""
    selector = pdb["spec"].get("selector")
    if selector is None:
        return False
    return set(selector.get("matchLabels", {}).items()) <= labels


class _Evictions:
    """:class:`~ksched.scheduler.preemption.EvictionApi` over the simulated cluster."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        self.cluster = cluster

    async def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        if not self.cluster.patch(pod, patch):
            raise NotFound(404, "NotFound", f"pods {pod.name!r} not found")

    async def delete_pod(self, pod: Pod) -> bool:
        return self.cluster.delete(pod)

    def record_event(self, body: dict[str, Any]) -> None:
        self.cluster.record_event(body)


def _own_copy(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A copy whose ``metadata``, ``spec`` and ``status`` this module may change (it only ever sets
    their keys; nested values are replaced, never changed in place), so the workload's dicts stay
    as generated."""
    return {
        **raw,
        "metadata": dict(raw["metadata"]),
        "spec": dict(raw["spec"]),
        "status": dict(raw.get("status", {})),
    }


def _merge_status(status: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """Strategic merge of a pod status patch: conditions merge by ``type``, ``None`` deletes."""
    for key, value in patch.items():
        if key == "conditions":
            conditions = {c["type"]: c for c in status.get("conditions", [])}
            for c in value:
                conditions[c["type"]] = {**conditions.get(c["type"], {}), **c}
            status["conditions"] = list(conditions.values())
        elif value is None:
            status.pop(key, None)
        else:
            status[key] = value
