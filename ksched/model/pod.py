"""Compact Pod records built from raw API JSON.

A record holds what the scheduler needs, parsed and validated once when the object arrives: the
effective request exactly as upstream computes it (``component-helpers/resource/helpers.go``
``PodRequests``: regular containers plus restartable sidecars, the init-phase peak, pod-level
requests, overhead), the non-zero request used by the resource scorers (100m cpu and 200Mi memory
for a container that does not name them), tolerations, node selection, host ports, images and the
raw pod (anti-)affinity terms that later plugins parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from operator import attrgetter
from typing import Any

from ksched.bounded import preview
from ksched.errors import ObjectError, describe_object
from ksched.model import _fields as f
from ksched.model import _shared as shared
from ksched.model.quantity import canonical_value, keep_value, known_value
from ksched.model.selectors import NodeAffinity, Toleration, parse_node_affinity, parse_toleration
from ksched.model.volumes import PodVolume, parse_pod_volumes
from ksched.model.workloads import controller_ref

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_MILLI_CPU_REQUEST = 100
"""Upstream ``DefaultMilliCPURequest``: what a container without a cpu request counts for scoring."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""Upstream ``DefaultMemoryRequest``: 200Mi for a container without a memory request."""
POD_LEVEL_RESOURCES = ("cpu", "memory")
"""Pod-level ``spec.resources.requests`` replace the aggregate for these and ``hugepages-*``."""


@dataclass(frozen=True, slots=True)
class HostPort:
    """A wanted host port; an empty host IP is ``0.0.0.0`` and an empty protocol is ``TCP``."""

    protocol: str
    host_ip: str
    port: int


@dataclass(frozen=True, slots=True)
class Pod:
    """What the scheduler knows of one pod. Immutable: an update builds a new record."""

    uid: str
    namespace: str
    name: str
    scheduler_name: str
    node_name: str
    """``spec.nodeName``; empty while the pod is pending."""
    priority: int
    labels: Mapping[str, str]
    requests: Mapping[str, int]
    """Effective request per resource in canonical units (cpu in millicores, the rest in units)."""
    nonzero_cpu: int
    nonzero_memory: int
    tolerations: tuple[Toleration, ...]
    node_selector: Mapping[str, str]
    node_affinity: NodeAffinity | None
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    """Container images (init and regular) as written in the spec."""
    container_count: int
    """Init plus regular containers: ImageLocality scales its threshold by this."""
    scheduling_gates: tuple[str, ...]
    deleting: bool
    nominated_node_name: str
    preemption_policy: str
    affinity: Mapping[str, Any] = field(default_factory=dict)
    """Raw ``podAffinity`` / ``podAntiAffinity`` (parsed by the inter-pod plugins)."""
    topology_spread_constraints: tuple[Mapping[str, Any], ...] = ()
    phase: str = ""
    volumes: tuple[PodVolume, ...] = ()
    """The volumes a volume plugin reads: claims, generic ephemeral volumes, in-tree disks."""
    volume_claims: tuple[str, ...] = ()
    """PersistentVolumeClaims the pod mounts (generic ephemeral volumes as ``<pod>-<volume>``)."""
    resource_claims: tuple[str, ...] = ()
    """Names in ``spec.resourceClaims`` (dynamic resource allocation)."""
    scheduled_condition: tuple[str, str, str] | None = None
    """``PodScheduled`` condition as (status, reason, message): the scheduler skips a status patch
    that would not change it, as upstream does."""
    resource_version: str = ""
    controller: tuple[str, str, str] | None = None
    """The controlling ownerReference as (apiVersion, kind, name): PodTopologySpread's default
    selector includes the selector of the pod's ReplicationController, ReplicaSet or StatefulSet."""
    start_time: float | None = None
    """``status.startTime`` as seconds since the epoch (None: not started). Preemption evicts the
    most recently started of equal-priority pods first, as upstream's ``MoreImportantPod`` does."""
    preempted_by_scheduler: bool = False
    """Condition ``DisruptionTarget=True`` with reason ``PreemptionByScheduler``: with ``deleting``,
    this pod is a victim already on its way out (upstream ``podTerminatingByPreemption``)."""
    generation: int = 0
    """``metadata.generation``: the scheduler writes it as the ``PodScheduled`` condition's
    ``observedGeneration`` (PodObservedGenerationTracking, GA in 1.35)."""
    scheduled_observed_generation: int = 0
    """The ``PodScheduled`` condition's ``observedGeneration`` (0 when absent)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def described(self) -> str:
        return describe_object("Pod", self.namespace, self.name)


def _quantity(name: str, q: Any, obj: str, path: str, kind: str) -> int:
    """:func:`canonical_value` of ``<path>.resources.<kind>.<name>``, remembered for text values
    (the field path is built only when a value is parsed)."""
    found = known_value(name, q)
    if found is not None:
        return found
    return keep_value(name, q, canonical_value(name, q, obj=obj, field=f"{path}.resources.{kind}.{name}"))


_POD_FIELDS = tuple(fld.name for fld in fields(Pod))
_pod_values = attrgetter(*_POD_FIELDS)
_NODE_NAME_AT = _POD_FIELDS.index("node_name")


def with_node_name(pod: Pod, node_name: str) -> Pod:
    """``dataclasses.replace(pod, node_name=node_name)`` at a third of the cost.

    The scheduler assumes every pod it places on a copy bound to the node; ``replace`` walks the
    field metadata and passes thirty keyword arguments each time, this passes the values in
    field order.
    """
    values = list(_pod_values(pod))
    values[_NODE_NAME_AT] = node_name
    return Pod(*values)


def _container_requests(c: Mapping[str, Any], obj: str, path: str) -> tuple[dict[str, int], bool, bool]:
    """One container's requests, with limits standing in for missing requests (API defaulting).

    Returns the requests and whether ``cpu`` / ``memory`` were named at all, which decides
    whether the non-zero defaults apply.
    """
    res = c.get("resources")  # the paths for the errors are built only when there is one
    if type(res) is not dict:
        res = f.mapping(res, obj, f"{path}.resources")
    requests = res.get("requests")
    if type(requests) is not dict:
        requests = f.mapping(requests, obj, f"{path}.resources.requests")
    limits = res.get("limits")
    if type(limits) is not dict:
        limits = f.mapping(limits, obj, f"{path}.resources.limits")
    out: dict[str, int] = {}
    for name, q in limits.items():
        if name not in requests:
            out[name] = _quantity(name, q, obj, path, "limits")
    for name, q in requests.items():
        out[name] = _quantity(name, q, obj, path, "requests")
    return out, "cpu" in out, "memory" in out


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def _aggregate(regular: list[dict[str, int]], init: list[tuple[dict[str, int], bool]]) -> dict[str, int]:
    """Upstream ``PodRequests`` without overhead: ``max(sum, init peak)`` per resource.

    ``init`` holds each init container's requests and whether it is a restartable sidecar.
    Sidecars run alongside everything after them, so they add to the sum and to every later
    init container's peak.
    """
    if not init and len(regular) == 1:  # most pods: one container, nothing to add up
        return dict(regular[0])
    total: dict[str, int] = {}
    for r in regular:
        _add(total, r)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for reqs, restartable in init:
        if restartable:
            _add(total, reqs)
            _add(sidecars, reqs)
            _max_into(init_peak, sidecars)
        else:
            need = dict(reqs)
            _add(need, sidecars)
            _max_into(init_peak, need)
    _max_into(total, init_peak)
    return total


def _nonzero(reqs: dict[str, int], has_cpu: bool, has_mem: bool) -> dict[str, int]:
    return {
        "cpu": reqs["cpu"] if has_cpu else DEFAULT_MILLI_CPU_REQUEST,
        "memory": reqs["memory"] if has_mem else DEFAULT_MEMORY_REQUEST,
    }


def _host_ports(c: Mapping[str, Any], obj: str, path: str) -> list[HostPort]:
    out: list[HostPort] = []
    ports = c.get("ports")
    if ports is None:
        return out
    for i, p in enumerate(f.sequence(ports, obj, f"{path}.ports")):
        pm = p if type(p) is dict else f.mapping(p, obj, f"{path}.ports[{i}]")
        if pm.get("hostPort") is None:  # a container port only (reads as host port 0)
            continue
        port = f.integer(pm.get("hostPort"), obj, f"{path}.ports[{i}].hostPort", lo=0, hi=65535)
        if port > 0:
            proto = f.string(pm.get("protocol"), obj, f"{path}.ports[{i}].protocol") or "TCP"
            ip = f.string(pm.get("hostIP"), obj, f"{path}.ports[{i}].hostIP") or "0.0.0.0"
            out.append(HostPort(proto, ip, port))
    return out


def _containers(
    spec: Mapping[str, Any], obj: str
) -> tuple[dict[str, int], dict[str, int], list[str], list[HostPort], int]:
    """What the containers add up to: (effective requests, non-zero requests, images, host ports,
    container count), init containers and restartable sidecars included, pod-level requests and
    overhead applied."""
    regular: list[dict[str, int]] = []
    regular_nz: list[dict[str, int]] = []
    images: list[str] = []
    ports: list[HostPort] = []
    containers = f.sequence(spec.get("containers"), obj, "spec.containers")
    for i, c in enumerate(containers):
        path = f"spec.containers[{i}]"
        cm = c if type(c) is dict else f.mapping(c, obj, path)
        reqs, has_cpu, has_mem = _container_requests(cm, obj, path)
        regular.append(reqs)
        regular_nz.append(_nonzero(reqs, has_cpu, has_mem))
        image = cm.get("image")
        if type(image) is not str:
            image = f.string(image, obj, f"{path}.image")
        if image:
            images.append(image)
        ports.extend(_host_ports(cm, obj, path))
    init: list[tuple[dict[str, int], bool]] = []
    init_nz: list[tuple[dict[str, int], bool]] = []
    init_containers = f.sequence(spec.get("initContainers"), obj, "spec.initContainers")
    for i, c in enumerate(init_containers):
        path = f"spec.initContainers[{i}]"
        cm = f.mapping(c, obj, path)
        reqs, has_cpu, has_mem = _container_requests(cm, obj, path)
        restartable = f.string(cm.get("restartPolicy"), obj, f"{path}.restartPolicy") == "Always"
        init.append((reqs, restartable))
        init_nz.append((_nonzero(reqs, has_cpu, has_mem), restartable))
        image = f.string(cm.get("image"), obj, f"{path}.image")
        if image:
            images.append(image)
        if restartable:
            ports.extend(_host_ports(cm, obj, path))

    requests = _aggregate(regular, init)
    nonzero = _aggregate(regular_nz, init_nz)
    if "resources" in spec or "overhead" in spec:
        _apply_pod_level(spec, requests, nonzero, obj)
    requests = {k: v for k, v in requests.items() if v != 0}
    return requests, nonzero, images, ports, len(containers) + len(init_containers)


def pod_from_dict(raw: Any) -> Pod:
    """Build a :class:`Pod` from API JSON; raise :class:`ObjectError` naming the bad field."""
    top = f.mapping(raw, "Pod", "")
    meta = f.mapping(top.get("metadata"), "Pod", "metadata")
    namespace = f.string(meta.get("namespace"), "Pod", "metadata.namespace", "default") or "default"
    name = f.string(meta.get("name"), "Pod", "metadata.name")
    obj = describe_object("Pod", namespace, name)
    if not name:
        raise ObjectError(obj, "metadata.name", "a pod needs a name")
    spec = f.mapping(top.get("spec"), obj, "spec")
    status = f.mapping(top.get("status"), obj, "status")
    requests, nonzero, images, ports, container_count = _containers(spec, obj)
    affinity = f.mapping(spec.get("affinity"), obj, "spec.affinity")
    volumes = parse_pod_volumes(spec.get("volumes"), obj, name)
    return Pod(
        uid=f.string(meta.get("uid"), obj, "metadata.uid") or f"{namespace}/{name}",
        namespace=shared.text(namespace),
        name=name,
        scheduler_name=shared.text(
            f.string(spec.get("schedulerName"), obj, "spec.schedulerName") or DEFAULT_SCHEDULER_NAME
        ),
        node_name=shared.text(f.string(spec.get("nodeName"), obj, "spec.nodeName")),
        priority=f.integer(spec.get("priority"), obj, "spec.priority", lo=-(2**31), hi=2**31 - 1),
        labels=shared.string_map(f.string_map(meta.get("labels"), obj, "metadata.labels")),
        requests=shared.int_map(requests),
        nonzero_cpu=nonzero.get("cpu", 0),
        nonzero_memory=nonzero.get("memory", 0),
        tolerations=_tolerations(spec.get("tolerations"), obj),
        node_selector=shared.string_map(f.string_map(spec.get("nodeSelector"), obj, "spec.nodeSelector")),
        node_affinity=parse_node_affinity(affinity.get("nodeAffinity"), obj, "spec.affinity.nodeAffinity"),
        host_ports=tuple(ports),
        images=shared.value(tuple(images)),
        container_count=container_count,
        scheduling_gates=_named_entries(spec.get("schedulingGates"), obj, "spec.schedulingGates"),
        deleting=meta.get("deletionTimestamp") is not None,
        nominated_node_name=f.string(status.get("nominatedNodeName"), obj, "status.nominatedNodeName"),
        preemption_policy=shared.text(
            f.string(spec.get("preemptionPolicy"), obj, "spec.preemptionPolicy") or "PreemptLowerPriority"
        ),
        affinity=_inter_pod_terms(affinity),
        topology_spread_constraints=_spread_constraints(spec.get("topologySpreadConstraints"), obj),
        phase=shared.text(f.string(status.get("phase"), obj, "status.phase")),
        # Read here, in field order: which malformed field is reported first stays the same.
        scheduled_condition=_without_generation(
            scheduled := _scheduled_condition(status.get("conditions"), obj)
        ),
        resource_version=f.string(meta.get("resourceVersion"), obj, "metadata.resourceVersion"),
        volumes=volumes,
        volume_claims=tuple(v.claim for v in volumes if v.uses_claim),
        resource_claims=_named_entries(spec.get("resourceClaims"), obj, "spec.resourceClaims"),
        controller=controller_ref(meta, obj) if meta.get("ownerReferences") else None,
        start_time=_timestamp(status.get("startTime"), obj, "status.startTime"),
        preempted_by_scheduler=_preempted_by_scheduler(status.get("conditions"), obj),
        generation=f.integer(meta.get("generation"), obj, "metadata.generation", lo=0),
        scheduled_observed_generation=scheduled[3] if scheduled is not None else 0,
    )


def _apply_pod_level(
    spec: Mapping[str, Any], requests: dict[str, int], nonzero: dict[str, int], obj: str
) -> None:
    """Pod-level ``spec.resources.requests`` replace the aggregate; ``spec.overhead`` adds to it."""
    res = f.mapping(spec.get("resources"), obj, "spec.resources")
    for rname, q in f.mapping(res.get("requests"), obj, "spec.resources.requests").items():
        if rname in POD_LEVEL_RESOURCES or rname.startswith("hugepages-"):
            value = canonical_value(rname, q, obj=obj, field=f"spec.resources.requests.{rname}")
            requests[rname] = value
            if rname in nonzero:
                nonzero[rname] = value
    for rname, q in f.mapping(spec.get("overhead"), obj, "spec.overhead").items():
        value = canonical_value(rname, q, obj=obj, field=f"spec.overhead.{rname}")
        requests[rname] = requests.get(rname, 0) + value
        if rname in nonzero:
            nonzero[rname] += value


_NO_TERMS: Mapping[str, Any] = {}
"""What most pods have: one empty map for all of them, not one each."""


def _inter_pod_terms(affinity: Mapping[str, Any]) -> Mapping[str, Any]:
    """The raw ``podAffinity`` / ``podAntiAffinity`` of ``spec.affinity`` (mostly absent)."""
    if not affinity:
        return _NO_TERMS
    terms = {k: v for k, v in affinity.items() if k in ("podAffinity", "podAntiAffinity")}
    return terms or _NO_TERMS


def _spread_constraints(raw: Any, obj: str) -> tuple[Mapping[str, Any], ...]:
    """The raw ``topologySpreadConstraints`` (PodTopologySpread parses them); most pods have none."""
    if raw is None:
        return ()
    items = f.sequence(raw, obj, "spec.topologySpreadConstraints")
    return tuple(f.mapping(c, obj, f"spec.topologySpreadConstraints[{i}]") for i, c in enumerate(items))


_TOLERATIONS: dict[tuple[tuple[object, ...], ...], tuple[Toleration, ...]] = {}
"""Parsed tolerations by their four fields: nearly every pod carries the same defaulted two."""


def _tolerations(raw: Any, obj: str) -> tuple[Toleration, ...]:
    """The pod's tolerations; a list seen before (every field a string) is not parsed again."""
    if not raw:
        return ()
    key = _toleration_key(raw)
    if key is None:
        return _parse_tolerations(raw, obj)
    return shared.memo(_TOLERATIONS, key, lambda: _parse_tolerations(raw, obj))


def _parse_tolerations(raw: Any, obj: str) -> tuple[Toleration, ...]:
    items = f.sequence(raw, obj, "spec.tolerations")
    parsed = (parse_toleration(t, obj, f"spec.tolerations[{i}]") for i, t in enumerate(items))
    return shared.value(tuple(parsed))


def _toleration_key(raw: Any) -> tuple[tuple[object, ...], ...] | None:
    """The fields parse_toleration reads, when each is a string or absent (None otherwise: the
    parse reports what is wrong)."""
    if type(raw) is not list:
        return None
    out = []
    for t in raw:
        if type(t) is not dict:
            return None
        fields = (t.get("key"), t.get("operator"), t.get("value"), t.get("effect"))
        if not all(v is None or type(v) is str for v in fields):
            return None
        out.append(fields)
    return tuple(out)


def _named_entries(raw: Any, obj: str, field: str) -> tuple[str, ...]:
    """The ``name`` of each entry of a list such as ``schedulingGates`` or ``resourceClaims``."""
    if not raw:
        return ()
    return tuple(
        f.string(f.mapping(e, obj, f"{field}[{i}]").get("name"), obj, f"{field}[{i}].name")
        for i, e in enumerate(f.sequence(raw, obj, field))
    )


def _timestamp(raw: Any, obj: str, field: str) -> float | None:
    """An RFC 3339 time (``metav1.Time``) as epoch seconds; absent gives None."""
    if raw is None:
        return None
    text = f.string(raw, obj, field)
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except (ValueError, OverflowError, OSError):
        raise ObjectError(obj, field, f"{preview(text)} is not an RFC 3339 time") from None


def _preempted_by_scheduler(raw: Any, obj: str) -> bool:
    if not raw:
        return False
    for i, c in enumerate(f.sequence(raw, obj, "status.conditions")):
        cm = c if type(c) is dict else f.mapping(c, obj, f"status.conditions[{i}]")
        if cm.get("type") == "DisruptionTarget":
            return cm.get("status") == "True" and cm.get("reason") == "PreemptionByScheduler"
    return False


def _without_generation(scheduled: tuple[str, str, str, int] | None) -> tuple[str, str, str] | None:
    return scheduled[:3] if scheduled is not None else None


def _scheduled_condition(raw: Any, obj: str) -> tuple[str, str, str, int] | None:
    """The ``PodScheduled`` condition as (status, reason, message, observedGeneration)."""
    if not raw:
        return None
    for i, c in enumerate(f.sequence(raw, obj, "status.conditions")):
        cm = c if type(c) is dict else f.mapping(c, obj, f"status.conditions[{i}]")
        if cm.get("type") == "PodScheduled":
            path = f"status.conditions[{i}]"
            return (
                f.string(cm.get("status"), obj, f"{path}.status"),
                f.string(cm.get("reason"), obj, f"{path}.reason"),
                f.string(cm.get("message"), obj, f"{path}.message"),
                f.integer(cm.get("observedGeneration"), obj, f"{path}.observedGeneration", lo=0),
            )
    return None
