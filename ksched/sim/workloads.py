"""Node and pod generators shaped like upstream's scheduler_perf cases.

The defaults are scheduler_perf's ``node-default.yaml`` (capacity pods 110, cpu 4, memory 32Gi) and
``pod-default.yaml`` (one pause container requesting cpu 100m, memory 500Mi). Templates are plain
dicts (a Node or Pod manifest); the small builders below add the traits the perf cases vary: zones,
labels, taints, extended resources, tolerations, node selectors, pod (anti-)affinity and topology
spread. Generated objects are fresh dicts, safe to hand to :meth:`Store.create` with ``copy=False``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from ksched.bounded import OBJECT_LIMIT, load_yaml, read_bytes
from ksched.sim._clock import rfc3339

Obj = dict[str, Any]

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def node_template(
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    extended: dict[str, str] | None = None,
) -> Obj:
    """A Node manifest; ``extended`` adds resources such as ``{"example.com/gpu": "8"}``."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, **(extended or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"labels": dict(labels or {})},
        "spec": {"taints": list(taints)} if taints else {},
        "status": {"capacity": capacity, "phase": "Running"},
    }


DEFAULT_NODE: Obj = node_template()


def pod_template(
    *,
    cpu: str | None = "100m",
    memory: str | None = "500Mi",
    labels: dict[str, str] | None = None,
    extended: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[Obj] | None = None,
    affinity: Obj | None = None,
    topology_spread: list[Obj] | None = None,
    priority: int | None = None,
    scheduler_name: str | None = None,
) -> Obj:
    """A Pod manifest with one pause container; ``None`` for cpu/memory means no request."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extended or {})
    spec: Obj = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": dict(requests), "limits": dict(requests)},
            }
        ],
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if affinity:
        spec["affinity"] = affinity
    if topology_spread:
        spec["topologySpreadConstraints"] = list(topology_spread)
    if priority is not None:
        spec["priority"] = priority
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": dict(labels or {})}, "spec": spec}


DEFAULT_POD: Obj = pod_template()


def pod_affinity_term(labels: dict[str, str], topology_key: str = HOSTNAME_LABEL) -> Obj:
    return {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": topology_key}


def anti_affinity(
    labels: dict[str, str], topology_key: str = HOSTNAME_LABEL, *, required: bool = True
) -> Obj:
    """``affinity`` with podAntiAffinity against pods carrying ``labels`` (scheduler_perf's anti-affinity)."""
    term = pod_affinity_term(labels, topology_key)
    if required:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]
        }
    }


def affinity(labels: dict[str, str], topology_key: str = ZONE_LABEL, *, required: bool = True) -> Obj:
    """``affinity`` with podAffinity towards pods carrying ``labels``."""
    term = pod_affinity_term(labels, topology_key)
    if required:
        return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]
        }
    }


def spread(
    labels: dict[str, str],
    topology_key: str = ZONE_LABEL,
    *,
    max_skew: int = 1,
    when_unsatisfiable: str = "DoNotSchedule",
) -> Obj:
    """One topologySpreadConstraint over pods carrying ``labels``."""
    return {
        "maxSkew": max_skew,
        "topologyKey": topology_key,
        "whenUnsatisfiable": when_unsatisfiable,
        "labelSelector": {"matchLabels": dict(labels)},
    }


def _copier(template: Obj) -> Any:
    raw = orjson.dumps(template)
    return lambda: orjson.loads(raw)


def make_nodes(
    count: int,
    template: Obj | None = None,
    zones: int = 0,
    *,
    name_prefix: str = "node-",
    start: int = 0,
    now: float | None = None,
) -> list[Obj]:
    """``count`` Nodes named ``{name_prefix}{i}`` with the status a kubelet reports (see
    :func:`_node_status`) and, if ``zones`` > 0, round-robin ``topology.kubernetes.io/zone`` labels.

    ``now`` (epoch seconds, default the wall clock) stamps the conditions' heartbeat and transition.
    """
    copy = _copier(template or DEFAULT_NODE)
    stamp = rfc3339(time.time() if now is None else now)
    out = []
    for i in range(start, start + count):
        node = copy()
        name = f"{name_prefix}{i}"
        meta = node.setdefault("metadata", {})
        meta.pop("generateName", None)
        meta["name"] = name
        labels = meta.setdefault("labels", {})
        for key, value in _kubelet_labels(name):
            labels.setdefault(key, value)
        if zones > 0:
            labels[ZONE_LABEL] = f"zone-{i % zones}"
            labels.setdefault(REGION_LABEL, "region-1")
        _node_status(node.setdefault("status", {}), i, name, stamp)
        out.append(node)
    return out


def _kubelet_labels(name: str) -> tuple[tuple[str, str], ...]:
    """The labels a kubelet sets on its Node (hostname, os, arch and their deprecated beta names)."""
    return (
        (HOSTNAME_LABEL, name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
    )


_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)
"""A healthy kubelet's node conditions (type, status, reason, message), in the kubelet's order."""


def _node_status(status: Obj, i: int, name: str, stamp: str) -> None:
    """Fill what a kubelet reports and the template left out: capacity and allocatable, the four
    conditions with heartbeat and transition times, addresses, daemonEndpoints and nodeInfo."""
    capacity = status.setdefault("capacity", dict(DEFAULT_NODE["status"]["capacity"]))
    status.setdefault("allocatable", dict(capacity))
    given = status.get("conditions") or []
    have = {c.get("type") for c in given if isinstance(c, dict)}
    conditions = [
        {
            "type": t,
            "status": s,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
            "reason": r,
            "message": m,
        }
        for t, s, r, m in _CONDITIONS
        if t not in have
    ]
    for c in given:
        if isinstance(c, dict):
            c.setdefault("lastHeartbeatTime", stamp)
            c.setdefault("lastTransitionTime", stamp)
    status["conditions"] = [*conditions, *given]
    status.setdefault(
        "addresses",
        [
            {"type": "InternalIP", "address": f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"},
            {"type": "Hostname", "address": name},
        ],
    )
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
    status.setdefault("nodeInfo", _node_info(i))


def _node_info(i: int) -> Obj:
    """A kubelet's ``status.nodeInfo``, every field upstream's schema requires filled (kubectl's
    client-side validation of ``kubectl get nodes -o yaml`` output checks them)."""
    ident = f"{i:032x}"
    return {
        "machineID": ident,
        "systemUUID": f"{ident[:8]}-{ident[8:12]}-{ident[12:16]}-{ident[16:20]}-{ident[20:]}",
        "bootID": ident,
        "kernelVersion": "6.1.0-ksched",
        "osImage": "ksched simulated node",
        "containerRuntimeVersion": "ksched://1.0.0",
        "kubeletVersion": "v1.35.0-ksched",
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }


def make_pods(
    count: int,
    template: Obj | None = None,
    namespace: str = "default",
    name_prefix: str = "pod-",
    *,
    start: int = 0,
) -> list[Obj]:
    """``count`` Pods named ``{name_prefix}{i}`` in ``namespace``, unbound (no spec.nodeName); a claim
    name containing ``{pod}`` gets the pod's name there."""
    copy = _copier(_with_containers(template) if template else DEFAULT_POD)
    volumes = (template or {}).get("spec", {}).get("volumes", [])
    claims = CLAIM_POD_PLACEHOLDER in orjson.dumps(volumes).decode()
    out = []
    for i in range(start, start + count):
        pod = copy()
        meta = pod.setdefault("metadata", {})
        meta.pop("generateName", None)
        meta["name"] = f"{name_prefix}{i}"
        meta["namespace"] = namespace
        if claims:
            _name_claims(pod, meta["name"])
        out.append(pod)
    return out


def _with_containers(template: Obj) -> Obj:
    """A template without containers gets the default pod's (the API server refuses a pod without)."""
    spec = template.get("spec")
    if isinstance(spec, dict) and spec.get("containers"):
        return template
    if spec is not None and not isinstance(spec, dict):
        return template
    return {**template, "spec": {**(spec or {}), "containers": DEFAULT_POD["spec"]["containers"]}}


CLAIM_POD_PLACEHOLDER = "{pod}"
"""In a template's ``persistentVolumeClaim.claimName``: replaced by each pod's name (a claim per pod)."""


def _name_claims(pod: Obj, name: str) -> None:
    for vol in pod["spec"]["volumes"]:
        ref = vol.get("persistentVolumeClaim")
        if ref and CLAIM_POD_PLACEHOLDER in ref.get("claimName", ""):
            ref["claimName"] = ref["claimName"].replace(CLAIM_POD_PLACEHOLDER, name)


def load_template(path: str | Path) -> Obj:
    """Read a YAML or JSON manifest (e.g. upstream's node-default.yaml)."""
    # A LimitError (too large, too deep, an alias bomb) is a ValueError naming the file and the limit.
    data = load_yaml(read_bytes(path, OBJECT_LIMIT, "a manifest template").decode("utf-8"), str(path))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a single manifest (a mapping), got {type(data).__name__}")
    return data
