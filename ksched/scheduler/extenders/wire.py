"""The extender wire format (``k8s.io/kube-scheduler/extender/v1`` types), both ways.

The Go types carry no json tags, so the keys are the Go field names (``Pod``, ``Nodes``,
``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``, ``Host``, ``Score``,
``PodName``, ``PodNamespace``, ``PodUID``, ``Node``, ``NodeNameToVictims``,
``NodeNameToMetaVictims``, ``Pods``, ``NumPDBViolations``, ``UID``); a nil pointer or map goes out
as ``null``, as Go's encoder writes it. Replies are read the way Go's decoder reads them: a key
matches its field case-insensitively.

Nodes are sent as the API server sent them (:mod:`.nodes` keeps their JSON when an extender is
not node-cache-capable), rebuilt from the record when that JSON is not at hand. Pods are rebuilt
from the scheduler's records, since the cache keeps compact records only: a pod carries its
metadata (name, namespace, uid, labels, resourceVersion), ``spec.schedulerName``, ``nodeName``,
``priority``, ``nodeSelector``, ``tolerations``, ``preemptionPolicy`` and one container named
``ksched-requests`` whose requests are the pod's effective requests. A rebuilt node carries its
name, uid, labels, ``spec.unschedulable``, taints, ``status.capacity`` / ``allocatable`` (both
the allocatable), conditions and images. An extender that reads other pod fields (annotations,
container names) must read the pod from the API server itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import orjson

from ksched.cache.reader import ClusterReader
from ksched.errors import ExtenderError
from ksched.framework.extender import FilterVerdict, Victims
from ksched.model.node import Node
from ksched.model.pod import Pod

REQUESTS_CONTAINER = "ksched-requests"


def quantity(resource: str, value: int) -> str:
    """A canonical integer as a Kubernetes quantity string (millicores for cpu)."""
    return f"{value}m" if resource == "cpu" else str(value)


def pod_object(pod: Pod) -> dict[str, Any]:
    """The v1 Pod sent in ``ExtenderArgs.Pod`` (rebuilt; see the module docstring)."""
    spec: dict[str, Any] = {
        "schedulerName": pod.scheduler_name,
        "priority": pod.priority,
        "containers": [
            {
                "name": REQUESTS_CONTAINER,
                "resources": {"requests": {r: quantity(r, v) for r, v in pod.requests.items()}},
            }
        ],
    }
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.tolerations:
        spec["tolerations"] = [_toleration(t.key, t.operator, t.value, t.effect) for t in pod.tolerations]
    if pod.preemption_policy:
        spec["preemptionPolicy"] = pod.preemption_policy
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    if pod.resource_version:
        meta["resourceVersion"] = pod.resource_version
    status: dict[str, Any] = {}
    if pod.phase:
        status["phase"] = pod.phase
    if pod.nominated_node_name:
        status["nominatedNodeName"] = pod.nominated_node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _toleration(key: str, operator: str, value: str, effect: str) -> dict[str, str]:
    out = {"key": key, "operator": operator, "value": value, "effect": effect}
    return {k: v for k, v in out.items() if v}


def node_object(node: Node) -> dict[str, Any]:
    """One v1 Node of ``ExtenderArgs.Nodes.items`` (rebuilt; see the module docstring)."""
    alloc = {r: quantity(r, v) for r, v in node.allocatable.items()}
    meta: dict[str, Any] = {"name": node.name, "uid": node.uid}
    if node.labels:
        meta["labels"] = dict(node.labels)
    spec: dict[str, Any] = {}
    if node.unschedulable:
        spec["unschedulable"] = True
    if node.taints:
        spec["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints]
    status: dict[str, Any] = {"capacity": alloc, "allocatable": dict(alloc)}
    if node.conditions:
        status["conditions"] = [{"type": t, "status": s} for t, s in node.conditions]
    if node.images:
        status["images"] = [{"names": list(i.names), "sizeBytes": i.size_bytes} for i in node.images]
    return {"metadata": meta, "spec": spec, "status": status}


class RawSource(Protocol):
    """Where the nodes' JSON as the API server sent it can be found (:mod:`.nodes`)."""

    def encoded(self, node: Node) -> bytes | None: ...


class NodeObjects:
    """Each node's encoded v1 Node: the API server's JSON from ``raw`` when it has the node's
    current record, else rebuilt from the record and kept while the record stays the same
    (records are immutable: an update brings a new one). A NodeList of thousands of nodes is
    then a join, not a rebuild."""

    def __init__(self, raw: RawSource | None = None) -> None:
        self.raw = raw
        self._by_name: dict[str, tuple[Node, bytes]] = {}

    def encoded(self, node: Node) -> bytes:
        if self.raw is not None:
            sent = self.raw.encoded(node)
            if sent is not None:
                return sent
        kept = self._by_name.get(node.name)
        if kept is not None and kept[0] is node:
            return kept[1]
        data = orjson.dumps(node_object(node))
        self._by_name[node.name] = (node, data)
        return data

    def keep_only(self, nodes: Sequence[Node]) -> None:
        """Drop every node but ``nodes`` once a store holds many more (deleted nodes, mostly),
        so it stays about the cluster's size."""
        if len(self._by_name) <= 2 * len(nodes) + 1024:
            return
        wanted = {n.name for n in nodes}
        for name in [n for n in self._by_name if n not in wanted]:
            del self._by_name[name]


def extender_args(
    pod: Pod, nodes: Sequence[Node], *, node_cache_capable: bool, objects: NodeObjects | None = None
) -> bytes:
    """``ExtenderArgs``, encoded: node names for a node-cache-capable extender, else a NodeList."""
    pod_json = orjson.dumps(pod_object(pod))
    if node_cache_capable:
        names = orjson.dumps([n.name for n in nodes])
        return b'{"Pod":' + pod_json + b',"Nodes":null,"NodeNames":' + names + b"}"
    store = objects if objects is not None else NodeObjects()
    items = b",".join(store.encoded(n) for n in nodes)
    store.keep_only(nodes)
    node_list = b'{"apiVersion":"v1","kind":"NodeList","metadata":{},"items":[' + items + b"]}"
    return b'{"Pod":' + pod_json + b',"Nodes":' + node_list + b',"NodeNames":null}'


def binding_args(pod: Pod, node: str) -> dict[str, Any]:
    """``ExtenderBindingArgs``."""
    return {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUID": pod.uid, "Node": node}


def preemption_args(pod: Pod, victims: Mapping[str, Victims], *, node_cache_capable: bool) -> dict[str, Any]:
    """``ExtenderPreemptionArgs``: victims by uid for a node-cache-capable extender, else as pods."""
    if node_cache_capable:
        meta = {
            node: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
            for node, v in victims.items()
        }
        return {"Pod": pod_object(pod), "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
    full = {
        node: {"Pods": [pod_object(p) for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
        for node, v in victims.items()
    }
    return {"Pod": pod_object(pod), "NodeNameToVictims": full, "NodeNameToMetaVictims": None}


# ---------------------------------------------------------------------- replies
class Reply:
    """Reads one extender's reply for one verb; every problem is an :class:`ExtenderError`."""

    def __init__(self, extender: str, verb: str) -> None:
        self.extender = extender
        self.verb = verb

    def error(self, problem: str) -> ExtenderError:
        return ExtenderError(
            self.extender, self.verb, f'extender "{self.extender}": {self.verb} reply: {problem}'
        )

    def field(self, obj: object, name: str, kind: type | tuple[type, ...], where: str = "") -> Any:
        """``obj[name]`` matched as Go does (exact key, else case-insensitively); None when absent
        or null; an error when ``obj`` is no object or the value is not of ``kind``."""
        if not isinstance(obj, dict):
            raise self.error(f"{where or 'the reply'} must be a JSON object, got {type(obj).__name__}")
        value = obj.get(name)
        if value is None and name not in obj:
            lowered = name.lower()
            value = next((v for k, v in obj.items() if k.lower() == lowered), None)
        if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and kind is int)):
            raise self.error(f"{where}{name} has the wrong type ({type(value).__name__})")
        return value

    def string_map(self, obj: object, name: str) -> dict[str, str]:
        value = self.field(obj, name, dict) or {}
        for k, v in value.items():
            if not isinstance(v, str):
                raise self.error(f"{name}[{k!r}] must be a string")
        return value


def filter_verdict(
    reply: Reply, data: object, sent: Sequence[str], *, node_cache_capable: bool
) -> FilterVerdict:
    """Upstream ``HTTPExtender.Filter``'s reading of an ``ExtenderFilterResult``."""
    error = reply.field(data, "Error", str)
    if error:
        raise ExtenderError(reply.extender, reply.verb, error)
    names = reply.field(data, "NodeNames", list)
    node_list = reply.field(data, "Nodes", dict)
    passed: list[str] = []
    if node_cache_capable and names is not None:
        passed = names if all(type(n) is str for n in names) else [_name(reply, n) for n in names]
    elif node_list is not None:
        items = reply.field(node_list, "items", list, "Nodes.") or []
        try:  # the usual reply, read at once; anything unusual goes the careful way
            passed = [item["metadata"]["name"] for item in items]
            if not all(type(n) is str for n in passed):
                raise TypeError
        except (KeyError, TypeError):
            passed = []
            for item in items:
                meta = reply.field(item, "metadata", dict, "Nodes.items[].") or {}
                passed.append(_name(reply, reply.field(meta, "name", str, "Nodes.items[].metadata.")))
    if passed != list(sent):  # the usual answer, every node in the order sent, needs no check
        known = set(sent)
        for name in passed:
            if name not in known:
                raise ExtenderError(
                    reply.extender,
                    reply.verb,
                    f'extender "{reply.extender}" claims a filtered node "{name}" '
                    "which is not found in the input node list",
                )
    return FilterVerdict(
        tuple(passed),
        reply.string_map(data, "FailedNodes"),
        reply.string_map(data, "FailedAndUnresolvableNodes"),
    )


def _name(reply: Reply, value: object) -> str:
    if not isinstance(value, str):
        raise reply.error(f"a node name must be a string, got {type(value).__name__}")
    return value


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
"""Go's int64, the type of ``HostPriority.Score``: a larger number fails to decode upstream."""


def host_priorities(reply: Reply, data: object) -> list[tuple[str, int]]:
    """A ``HostPriorityList``: ``[{"Host": name, "Score": int}]`` (null: empty)."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise reply.error(f"must be a JSON list of {{Host, Score}}, got {type(data).__name__}")
    try:  # the usual reply, read at once; anything unusual goes the careful way
        fast = [(item["Host"], item["Score"]) for item in data]
        if all(type(h) is str and type(v) is int and INT64_MIN <= v <= INT64_MAX for h, v in fast):
            return fast
    except (KeyError, TypeError):
        pass
    out = []
    for i, item in enumerate(data):
        host = reply.field(item, "Host", str, f"[{i}].")
        score = reply.field(item, "Score", int, f"[{i}].")
        if score is not None and not INT64_MIN <= score <= INT64_MAX:
            raise reply.error(f"[{i}].Score {str(score)[:24]} is out of the int64 range")
        out.append((host or "", score or 0))
    return out


def binding_error(reply: Reply, data: object) -> str:
    """``ExtenderBindingResult.Error`` ("" when the binding succeeded)."""
    return reply.field(data, "Error", str) or ""


def meta_victims(reply: Reply, data: object, cluster: ClusterReader) -> dict[str, Victims]:
    """Upstream ``convertToVictims``: the reply's ``NodeNameToMetaVictims`` as pods of the cache."""
    by_node = reply.field(data, "NodeNameToMetaVictims", dict) or {}
    out: dict[str, Victims] = {}
    for node, meta in by_node.items():
        if node not in cluster.nodes.row_of:
            raise reply.error(f'nodeinfo not found for node name "{node}"')
        pods = {p.uid: p for p in cluster.pods_on(node)}
        chosen = []
        for i, mp in enumerate(reply.field(meta, "Pods", list, f"{node}.") or []):
            uid = reply.field(mp, "UID", str, f"{node}.Pods[{i}].") or ""
            pod = pods.get(uid)
            if pod is None:
                raise ExtenderError(
                    reply.extender,
                    reply.verb,
                    f"extender: {reply.extender} claims to preempt pod (UID: &{{{uid}}}) on node: {node}, "
                    "but the pod is not found on that node",
                )
            chosen.append(pod)
        violations = reply.field(meta, "NumPDBViolations", int, f"{node}.") or 0
        out[node] = Victims(tuple(chosen), violations)
    return out
