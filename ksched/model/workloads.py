"""Compact records of the objects that give a pod its default spreading selector.

Upstream's ``helper.DefaultSelector`` (``pkg/scheduler/framework/plugins/helper/spread.go``) builds
the selector of PodTopologySpread's default (cluster-level) constraints from the Services that
select a pod and from the ReplicationController, ReplicaSet or StatefulSet that controls it. The
scheduler needs only each object's kind, namespace, name and selector, so that is all these keep.

Selector shapes differ by kind, as in the API: a Service and a ReplicationController select with a
plain label map (``spec.selector``), a ReplicaSet and a StatefulSet with a ``metav1.LabelSelector``.
A Service whose map is absent or empty selects nothing (the API server drops an empty map, so the
scheduler sees nil: "services with nil selectors match nothing, not everything"). A ReplicaSet or
StatefulSet selector that fails to parse makes the decoder refuse the object; upstream then skips it
the same way (``LabelSelectorAsSelector`` fails and nothing is added).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ksched.errors import ObjectError, describe_object
from ksched.model import _fields as f
from ksched.model.selectors import LabelSelector, parse_label_selector

SERVICE: Final = "Service"
REPLICATION_CONTROLLER: Final = "ReplicationController"
REPLICA_SET: Final = "ReplicaSet"
STATEFUL_SET: Final = "StatefulSet"
KINDS: Final = (SERVICE, REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET)

CONTROLLER_API_VERSIONS: Final[Mapping[str, str]] = {
    REPLICATION_CONTROLLER: "v1",
    REPLICA_SET: "apps/v1",
    STATEFUL_SET: "apps/v1",
}
"""The group/version under which upstream recognises each controller kind in an ownerReference."""


@dataclass(frozen=True, slots=True)
class Workload:
    """A Service, ReplicationController, ReplicaSet or StatefulSet, reduced to its selector.

    ``match_labels`` is the plain map of a Service or ReplicationController (``None`` for a Service
    that selects nothing); ``selector`` the parsed LabelSelector of a ReplicaSet or StatefulSet
    (``None`` when nil). Immutable: an update builds a new record.
    """

    kind: str
    namespace: str
    name: str
    match_labels: Mapping[str, str] | None = None
    selector: LabelSelector | None = None
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def described(self) -> str:
        return describe_object(self.kind, self.namespace, self.name)


def _meta(raw: Any, kind: str) -> tuple[Mapping[str, Any], str, str, str, str]:
    top = f.mapping(raw, kind, "")
    meta = f.mapping(top.get("metadata"), kind, "metadata")
    namespace = f.string(meta.get("namespace"), kind, "metadata.namespace", "default") or "default"
    name = f.string(meta.get("name"), kind, "metadata.name")
    obj = describe_object(kind, namespace, name)
    if not name:
        raise ObjectError(obj, "metadata.name", f"a {kind} needs a name")
    spec = f.mapping(top.get("spec"), obj, "spec")
    return spec, namespace, name, obj, f.string(meta.get("uid"), obj, "metadata.uid")


def _map_workload(raw: Any, kind: str) -> Workload:
    spec, namespace, name, obj, uid = _meta(raw, kind)
    labels = f.string_map(spec.get("selector"), obj, "spec.selector")
    if kind == SERVICE and not labels:
        return Workload(kind, namespace, name, None, None, uid)
    return Workload(kind, namespace, name, labels, None, uid)


def _selector_workload(raw: Any, kind: str) -> Workload:
    spec, namespace, name, obj, uid = _meta(raw, kind)
    selector = parse_label_selector(spec.get("selector"), obj, "spec.selector")
    return Workload(kind, namespace, name, None, selector, uid)


def service_from_dict(raw: Any) -> Workload:
    """A v1 Service; raise :class:`ObjectError` naming the bad field."""
    return _map_workload(raw, SERVICE)


def replication_controller_from_dict(raw: Any) -> Workload:
    """A v1 ReplicationController."""
    return _map_workload(raw, REPLICATION_CONTROLLER)


def replica_set_from_dict(raw: Any) -> Workload:
    """An apps/v1 ReplicaSet."""
    return _selector_workload(raw, REPLICA_SET)


def stateful_set_from_dict(raw: Any) -> Workload:
    """An apps/v1 StatefulSet."""
    return _selector_workload(raw, STATEFUL_SET)


DECODERS: Final = {
    SERVICE: service_from_dict,
    REPLICATION_CONTROLLER: replication_controller_from_dict,
    REPLICA_SET: replica_set_from_dict,
    STATEFUL_SET: stateful_set_from_dict,
}
"""Decoder by kind (``ksched explain`` reads these kinds from cluster files)."""


def controller_ref(meta: Mapping[str, Any], obj: str) -> tuple[str, str, str] | None:
    """The pod's controller ``(apiVersion, kind, name)`` (upstream ``GetControllerOfNoCopy``), or None."""
    refs = f.sequence(meta.get("ownerReferences"), obj, "metadata.ownerReferences")
    for i, r in enumerate(refs):
        path = f"metadata.ownerReferences[{i}]"
        rm = f.mapping(r, obj, path)
        if f.boolean(rm.get("controller"), obj, f"{path}.controller"):
            return (
                f.string(rm.get("apiVersion"), obj, f"{path}.apiVersion"),
                f.string(rm.get("kind"), obj, f"{path}.kind"),
                f.string(rm.get("name"), obj, f"{path}.name"),
            )
    return None
