"""Pod and node builders for table-driven tests, in the spirit of upstream's ``testing/wrappers.go``.

They produce raw API dicts (what the informers and ``ksched explain`` see) so that every test also
exercises the model's parsing; :func:`node` and :func:`pod` parse them into records and
:func:`cluster_of` turns them into a :class:`ClusterCache`. Every option is keyword-only and maps to
one API field, so a table row reads like upstream's ``st.MakePod().Node("n1").Terminating()``; a
test module keeps only the defaults its own table shares (a one-line partial), never its own dict
surgery.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ksched.cache.cluster import ClusterCache
from ksched.model.node import Node, node_from_dict
from ksched.model.pod import Pod, pod_from_dict

TERMINATING_SINCE = "2024-01-01T00:00:00Z"
"""The ``deletionTimestamp`` of a terminating pod: any fixed instant, so built objects compare equal."""


def make_node(
    name: str,
    *,
    cpu: str | int | None = None,
    memory: str | int | None = None,
    pods: str | int | None = None,
    allocatable: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    unschedulable: bool = False,
    images: Iterable[tuple[Iterable[str], int]] = (),
) -> dict[str, Any]:
    """A Node dict; ``allocatable`` adds/overrides resources (e.g. ``{"nvidia.com/gpu": "2"}``).

    ``images`` holds (names, sizeBytes) pairs; ``taints`` are dicts as :func:`taint` builds them.
    """
    alloc: dict[str, Any] = {}
    if cpu is not None:
        alloc["cpu"] = str(cpu)
    if memory is not None:
        alloc["memory"] = str(memory)
    if pods is not None:
        alloc["pods"] = str(pods)
    alloc.update(allocatable or {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
        "status": {
            "allocatable": alloc,
            "images": [{"names": list(n), "sizeBytes": s} for n, s in images],
        },
    }


def node(name: str, **kwargs: Any) -> Node:
    """A parsed :class:`Node` record (see :func:`make_node`), for tests that feed the cache directly."""
    return node_from_dict(make_node(name, **kwargs))


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    """A taint dict, ``{"key", "value", "effect"}`` as the API writes it."""
    return {"key": key, "value": value, "effect": effect}


def container(
    name: str = "c",
    *,
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    image: str = "",
    host_ports: Iterable[tuple[str, str, int]] = (),
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A container dict; ``host_ports`` holds (protocol, hostIP, hostPort) triples."""
    c: dict[str, Any] = {"name": name, "image": image, "resources": {}}
    if requests is not None:
        c["resources"]["requests"] = {k: str(v) for k, v in requests.items()}
    if limits is not None:
        c["resources"]["limits"] = {k: str(v) for k, v in limits.items()}
    if host_ports:
        c["ports"] = [
            {"containerPort": port, "hostPort": port, "protocol": proto, "hostIP": ip}
            for proto, ip, port in host_ports
        ]
    if restart_policy is not None:
        c["restartPolicy"] = restart_policy
    return c


def tolerating(taint: Mapping[str, str]) -> dict[str, str]:
    """The toleration (operator ``Equal``) that tolerates exactly ``taint``."""
    return {"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]}


def make_pod(
    name: str = "p",
    *,
    namespace: str = "default",
    uid: str | None = None,
    node_name: str = "",
    requests: Mapping[str, Any] | None = None,
    containers: Iterable[Mapping[str, Any]] | None = None,
    init_containers: Iterable[Mapping[str, Any]] = (),
    overhead: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Iterable[Mapping[str, str]] = (),
    priority: int | None = None,
    scheduler_name: str | None = None,
    scheduling_gates: Iterable[str] = (),
    preemption_policy: str | None = None,
    terminating: bool = False,
    status: Mapping[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """A Pod dict. ``requests`` is a shortcut for one container with those requests.

    ``terminating`` sets ``metadata.deletionTimestamp`` (:data:`TERMINATING_SINCE`): the pod is being
    deleted, which the cache and the plugins treat differently from a running one. ``status`` is
    copied as the pod's status (see :func:`pod_status`); without it the dict has no status at all.
    Other ``spec`` fields go in as camelCase keywords (``topologySpreadConstraints=[...]``).
    """
    if containers is None:
        containers = [container(requests=requests)] if requests is not None else [container()]
    spec: dict[str, Any] = {
        "containers": [dict(c) for c in containers],
        "initContainers": [dict(c) for c in init_containers],
        "tolerations": [dict(t) for t in tolerations],
    }
    if node_name:
        spec["nodeName"] = node_name
    if overhead is not None:
        spec["overhead"] = {k: str(v) for k, v in overhead.items()}
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    if priority is not None:
        spec["priority"] = priority
    if scheduler_name is not None:
        spec["schedulerName"] = scheduler_name
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    spec.update(spec_extra)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": dict(labels or {}),
    }
    if terminating:
        metadata["deletionTimestamp"] = TERMINATING_SINCE
    raw: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    if status is not None:
        raw["status"] = dict(status)
    return raw


def make_pdb(
    name: str,
    *,
    namespace: str = "default",
    match_labels: Mapping[str, str] | None = None,
    min_available: int | None = None,
    disruptions_allowed: int = 0,
) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget dict. ``match_labels=None`` leaves the selector out (the
    budget covers no pod); ``disruptions_allowed`` is the status the disruption controller writes."""
    spec: dict[str, Any] = {}
    if match_labels is not None:
        spec["selector"] = {"matchLabels": dict(match_labels)}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pdb-{namespace}-{name}"},
        "spec": spec,
        "status": {"disruptionsAllowed": disruptions_allowed},
    }


def pod_status(
    *,
    start_s: int | None = None,
    nominated_node_name: str = "",
    disruption_target: bool = False,
) -> dict[str, Any]:
    """A pod ``status``: ``start_s`` is startTime as seconds after the epoch (upstream's
    ``StartTime(epoch + s)``, below a minute); ``disruption_target`` adds the DisruptionTarget
    condition the scheduler sets on a victim it preempts."""
    out: dict[str, Any] = {}
    if start_s is not None:
        out["startTime"] = f"1970-01-01T00:00:{start_s:02d}Z"
    if nominated_node_name:
        out["nominatedNodeName"] = nominated_node_name
    if disruption_target:
        out["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    return out


def pod(name: str = "p", **kwargs: Any) -> Pod:
    """A parsed :class:`Pod` record (see :func:`make_pod`), for tests that feed the cache directly."""
    return pod_from_dict(make_pod(name, **kwargs))


def cluster_of(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]] = ()) -> ClusterCache:
    """A cache holding ``nodes`` and the bound ``pods`` (those with ``spec.nodeName``)."""
    cache = ClusterCache()
    for n in nodes:
        cache.add_node(node_from_dict(n))
    for p in pods:
        record = pod_from_dict(p)
        if record.node_name:
            cache.add_pod(record)
    return cache


# -- storage objects (raw API dicts, for the embedded cluster and the volume plugins) -----------------


def make_pv(
    name: str,
    *,
    storage: str = "1Gi",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    storage_class: str | None = None,
    labels: Mapping[str, str] | None = None,
    claim_ref: Mapping[str, str] | None = None,
    volume_mode: str | None = None,
    node_affinity: Mapping[str, Any] | None = None,
    reclaim_policy: str | None = None,
    driver: str = "csi.example.com",
) -> dict[str, Any]:
    """A PersistentVolume dict: a CSI volume of ``driver`` with ``storage`` capacity."""
    spec: dict[str, Any] = {
        "capacity": {"storage": storage},
        "accessModes": list(access_modes),
        "csi": {"driver": driver, "volumeHandle": f"handle-{name}"},
    }
    for key, value in (
        ("storageClassName", storage_class),
        ("claimRef", dict(claim_ref) if claim_ref is not None else None),
        ("volumeMode", volume_mode),
        ("nodeAffinity", dict(node_affinity) if node_affinity is not None else None),
        ("persistentVolumeReclaimPolicy", reclaim_policy),
    ):
        if value is not None:
            spec[key] = value
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def make_pvc(
    name: str,
    *,
    namespace: str = "default",
    storage: str = "1Gi",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    storage_class: str | None = None,
    volume_name: str | None = None,
    selector: Mapping[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    volume_mode: str | None = None,
) -> dict[str, Any]:
    """A PersistentVolumeClaim dict asking for ``storage``; ``storage_class=None`` leaves the class unset."""
    spec: dict[str, Any] = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": storage}},
    }
    for key, value in (
        ("storageClassName", storage_class),
        ("volumeName", volume_name),
        ("selector", dict(selector) if selector is not None else None),
        ("volumeMode", volume_mode),
    ):
        if value is not None:
            spec[key] = value
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def make_storage_class(
    name: str,
    *,
    provisioner: str = "csi.example.com",
    binding_mode: str | None = None,
    reclaim_policy: str | None = None,
    default: bool = False,
    allowed_topologies: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, Any]:
    """A StorageClass dict; ``allowed_topologies`` is one term, label key -> allowed values."""
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if default:
        sc["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    if binding_mode is not None:
        sc["volumeBindingMode"] = binding_mode
    if reclaim_policy is not None:
        sc["reclaimPolicy"] = reclaim_policy
    if allowed_topologies is not None:
        exprs = [{"key": k, "values": list(v)} for k, v in allowed_topologies.items()]
        sc["allowedTopologies"] = [{"matchLabelExpressions": exprs}]
    return sc


def make_csinode(
    node: str, drivers: Mapping[str, Iterable[str]], *, count: int | None = None
) -> dict[str, Any]:
    """A CSINode dict for ``node``: driver name -> its topology keys (``count``: allocatable volumes)."""
    out = []
    for driver, keys in drivers.items():
        d: dict[str, Any] = {"name": driver, "nodeID": node, "topologyKeys": list(keys)}
        if count is not None:
            d["allocatable"] = {"count": count}
        out.append(d)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": out},
    }
