"""Pod and node builders for table-driven tests, in the spirit of upstream's ``testing/wrappers.go``.

They produce raw API dicts (what the informers and ``ksched explain`` see) so that every test also
exercises the model's parsing; :func:`cluster_of` turns them into a :class:`ClusterCache`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ksched.cache.cluster import ClusterCache
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict


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
    """A Node dict; ``allocatable`` adds/overrides resources (e.g. ``{"nvidia.com/gpu": "2"}``)."""
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
    status: Mapping[str, Any] | None = None,
    **spec_extra: Any,
) -> dict[str, Any]:
    """A Pod dict. ``requests`` is a shortcut for one container with those requests; ``status``
    (e.g. ``startTime``, ``phase``) is copied in as written."""
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
    spec.update(spec_extra)
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "labels": dict(labels or {}),
        },
        "spec": spec,
    }
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


def pod(**kwargs: Any) -> Pod:
    """A parsed :class:`Pod` record (see :func:`make_pod`)."""
    return pod_from_dict(make_pod(**kwargs))


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
