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


PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def _not_overcommitable(resource: str) -> bool:
    """Extended resources and hugepages: kube-apiserver wants their request equal to their limit."""
    return resource.startswith("hugepages-") or ("/" in resource and "kubernetes.io/" not in resource)


def container(
    name: str = "c",
    *,
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    image: str = PAUSE_IMAGE,
    host_ports: Iterable[tuple[str, str, int]] = (),
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A container dict; ``host_ports`` holds (protocol, hostIP, hostPort) triples.

    As kube-apiserver requires, extended resources and hugepages (which may not be overcommitted)
    get a limit equal to their request unless ``limits`` names them.
    """
    c: dict[str, Any] = {"name": name, "image": image, "resources": {}}
    if requests is not None:
        c["resources"]["requests"] = {k: str(v) for k, v in requests.items()}
    fixed = {k: v for k, v in (requests or {}).items() if _not_overcommitable(k)}
    if limits is not None or fixed:
        c["resources"]["limits"] = {k: str(v) for k, v in {**fixed, **(limits or {})}.items()}
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


# --------------------------------------------------------------------------- storage
# Volume entries (``make_pod(volumes=[...])``) and the storage objects the volume plugins read, as
# upstream's ``st.MakePersistentVolume()`` / ``MakePersistentVolumeClaim()`` build them.


def claim_volume(claim: str, *, name: str | None = None, read_only: bool = False) -> dict[str, Any]:
    """A ``persistentVolumeClaim`` volume entry."""
    return {
        "name": name or claim,
        "persistentVolumeClaim": {"claimName": claim, **({"readOnly": True} if read_only else {})},
    }


def ephemeral_volume(name: str) -> dict[str, Any]:
    """A generic ephemeral volume entry (its claim is ``<pod>-<name>``)."""
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


def inline_volume(source: str, name: str = "", **fields: Any) -> dict[str, Any]:
    """An inline volume entry: ``inline_volume("awsElasticBlockStore", volumeID="vol-1")``."""
    return {"name": name or source.lower(), source: dict(fields)}


def make_pv(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    csi: tuple[str, str] | None = None,
    storage_class: str | None = None,
    claim: tuple[str, str] | None = None,
    resource_version: int | None = None,
    **source: Any,
) -> dict[str, Any]:
    """A PersistentVolume dict; ``csi=(driver, handle)``, ``claim=(namespace, name)`` for its
    claimRef, other keywords are in-tree sources (``awsElasticBlockStore={"volumeID": ...}``)."""
    spec: dict[str, Any] = dict(source)
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if resource_version is not None:
        meta["resourceVersion"] = str(resource_version)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def make_pvc(
    name: str,
    *,
    namespace: str = "default",
    volume_name: str = "",
    storage_class: str | None = None,
    access_modes: Iterable[str] = (),
    owner_uid: str | None = None,
    resource_version: int | None = None,
) -> dict[str, Any]:
    """A PersistentVolumeClaim dict; ``owner_uid`` adds a controller ownerReference to that pod uid."""
    spec: dict[str, Any] = {"accessModes": list(access_modes)}
    if volume_name:
        spec["volumeName"] = volume_name
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner_uid is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "owner", "uid": owner_uid, "controller": True}]
    if resource_version is not None:
        meta["resourceVersion"] = str(resource_version)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def make_storage_class(
    name: str, *, provisioner: str = "", binding_mode: str | None = None
) -> dict[str, Any]:
    """A StorageClass dict (``binding_mode=None`` leaves volumeBindingMode unset)."""
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if binding_mode is not None:
        raw["volumeBindingMode"] = binding_mode
    return raw


def make_csi_node(
    name: str, drivers: Mapping[str, int | None] | None = None, *, migrated: Iterable[str] = ()
) -> dict[str, Any]:
    """A CSINode dict: driver name -> ``allocatable.count`` (None: no count)."""
    meta: dict[str, Any] = {"name": name}
    if migrated:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(migrated)}
    entries = []
    for driver, count in (drivers or {}).items():
        entry: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    spec = {"drivers": entries}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta, "spec": spec}


def make_volume_attachment(name: str, *, node: str, attacher: str, pv: str | None) -> dict[str, Any]:
    """A VolumeAttachment dict; ``pv=None`` gives an inline (migrated) source."""
    source: dict[str, Any] = {"persistentVolumeName": pv} if pv is not None else {"inlineVolumeSpec": {}}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node, "source": source},
    }


def store_objects(cache: ClusterCache, objects: Iterable[Mapping[str, Any]]) -> ClusterCache:
    """Put storage object dicts into the cache's volume store, as the informers would."""
    from ksched.model.storage import DECODERS

    for raw in objects:
        resource, decode = DECODERS[raw["kind"]]
        cache.volumes.upsert(resource, decode(raw))
    return cache
