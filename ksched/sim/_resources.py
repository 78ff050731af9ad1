"""The resource types the embedded cluster serves, and the discovery documents built from them.

One frozen :class:`ResourceType` per resource is the single source for routing, store keys, list kinds
and discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/G/V``), so adding a type is one line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_RW = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_SUB_RW = ("get", "patch", "update")
CREATE_ONLY = ("create",)
_AUTHN, _AUTHZ = "authentication.k8s.io", "authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class ResourceType:
    """How one resource is addressed and described."""

    plural: str
    singular: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: dict[str, str] = field(default_factory=dict)
    """Subresource name -> kind it accepts (``binding`` -> ``Binding``)."""
    categories: tuple[str, ...] = ()
    storage: str = ""
    """Store key of the resource whose table holds these objects, when this is another API version of
    it (``events.events.k8s.io`` -> ``events``); objects are converted in ``ksched/sim/_convert.py``."""
    verbs: tuple[str, ...] = _RW
    """What discovery says may be done; the review APIs are create-only (:data:`CREATE_ONLY`)."""
    # Derived once (read on every request and every store write, so not properties):
    key: str = field(init=False, repr=False, compare=False)
    """Store key: ``pods`` or ``leases.coordination.k8s.io`` (unique across groups)."""
    storage_key: str = field(init=False, repr=False, compare=False)
    """Key of the store table holding this resource's objects."""
    api_version: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        key = f"{self.plural}.{self.group}" if self.group else self.plural
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "storage_key", self.storage or key)
        api_version = f"{self.group}/{self.version}" if self.group else self.version
        object.__setattr__(self, "api_version", api_version)

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("nodes", "node", "Node", "", "v1", False, ("no",), {"status": "Node"}),
    ResourceType(
        "pods",
        "pod",
        "Pod",
        "",
        "v1",
        True,
        ("po",),
        {"binding": "Binding", "status": "Pod", "eviction": "Eviction"},
        ("all",),
    ),
    ResourceType("namespaces", "namespace", "Namespace", "", "v1", False, ("ns",), {"status": "Namespace"}),
    ResourceType("events", "event", "Event", "", "v1", True, ("ev",)),
    # one resource served through two API versions, stored in the core shape (as kube-apiserver does)
    ResourceType("events", "event", "Event", "events.k8s.io", "v1", True, ("ev",), storage="events"),
    ResourceType("leases", "lease", "Lease", "coordination.k8s.io", "v1", True),
    ResourceType(
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        "policy",
        "v1",
        True,
        ("pdb",),
        {"status": "PodDisruptionBudget"},
    ),
    # Stored only (no controller acts on them), so `kubectl apply -k deploy/` works against the sim.
    ResourceType("configmaps", "configmap", "ConfigMap", "", "v1", True, ("cm",)),
    ResourceType("serviceaccounts", "serviceaccount", "ServiceAccount", "", "v1", True, ("sa",)),
    ResourceType(
        "deployments",
        "deployment",
        "Deployment",
        "apps",
        "v1",
        True,
        ("deploy",),
        {"status": "Deployment"},
        ("all",),
    ),
    ResourceType("clusterroles", "clusterrole", "ClusterRole", "rbac.authorization.k8s.io", "v1", False),
    ResourceType(
        "clusterrolebindings",
        "clusterrolebinding",
        "ClusterRoleBinding",
        "rbac.authorization.k8s.io",
        "v1",
        False,
    ),
    ResourceType("roles", "role", "Role", "rbac.authorization.k8s.io", "v1", True),
    ResourceType("rolebindings", "rolebinding", "RoleBinding", "rbac.authorization.k8s.io", "v1", True),
    # Stored only: their selectors give PodTopologySpread's default constraints a selector.
    ResourceType("services", "service", "Service", "", "v1", True, ("svc",), {"status": "Service"}, ("all",)),
    ResourceType(
        "replicationcontrollers",
        "replicationcontroller",
        "ReplicationController",
        "",
        "v1",
        True,
        ("rc",),
        {"status": "ReplicationController"},
        ("all",),
    ),
    ResourceType(
        "replicasets",
        "replicaset",
        "ReplicaSet",
        "apps",
        "v1",
        True,
        ("rs",),
        {"status": "ReplicaSet"},
        ("all",),
    ),
    ResourceType(
        "statefulsets",
        "statefulset",
        "StatefulSet",
        "apps",
        "v1",
        True,
        ("sts",),
        {"status": "StatefulSet"},
        ("all",),
    ),
    # Storage: defaulted and validated in ksched/sim/_storage_api.py; the PV controller, CSI
    # provisioner and ephemeral volume controller stand-ins (ksched/sim/storage_controllers/) act on them.
    ResourceType(
        "persistentvolumes",
        "persistentvolume",
        "PersistentVolume",
        "",
        "v1",
        False,
        ("pv",),
        {"status": "PersistentVolume"},
    ),
    ResourceType(
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        "",
        "v1",
        True,
        ("pvc",),
        {"status": "PersistentVolumeClaim"},
    ),
    ResourceType("storageclasses", "storageclass", "StorageClass", "storage.k8s.io", "v1", False, ("sc",)),
    ResourceType("csinodes", "csinode", "CSINode", "storage.k8s.io", "v1", False),
    ResourceType("csidrivers", "csidriver", "CSIDriver", "storage.k8s.io", "v1", False),
    ResourceType(
        "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", "storage.k8s.io", "v1", True
    ),
    ResourceType(
        "volumeattachments",
        "volumeattachment",
        "VolumeAttachment",
        "storage.k8s.io",
        "v1",
        False,
        (),
        {"status": "VolumeAttachment"},
    ),
    ResourceType(
        "volumeattributesclasses",
        "volumeattributesclass",
        "VolumeAttributesClass",
        "storage.k8s.io",
        "v1",
        False,
        ("vac",),
    ),
    # Create-only reviews, answered in ksched/sim/_reviews.py and never stored.
    *(
        ResourceType(plural, plural[:-1], kind, group, "v1", False, verbs=CREATE_ONLY)
        for plural, kind, group in (
            ("tokenreviews", "TokenReview", _AUTHN),
            ("selfsubjectreviews", "SelfSubjectReview", _AUTHN),
            ("subjectaccessreviews", "SubjectAccessReview", _AUTHZ),
            ("selfsubjectaccessreviews", "SelfSubjectAccessReview", _AUTHZ),
        )
    ),
)

BY_PATH: dict[tuple[str, str, str], ResourceType] = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KEY: dict[str, ResourceType] = {r.key: r for r in RESOURCES}
GROUPS: dict[str, str] = {r.group: r.version for r in RESOURCES if r.group}


def resolve(name: str) -> ResourceType:
    """Find a type by store key, plural, singular, short name or kind (core group wins ties).

    Used by the Python API so tests can say ``store.list("pods")`` or ``store.list("leases")``.
    """
    if name in BY_KEY:
        return BY_KEY[name]
    low = name.lower()
    for r in RESOURCES:
        if low in (r.plural, r.singular, r.kind.lower()) or low in r.short_names:
            return r
    raise KeyError(f"unknown resource {name!r}; known: {sorted(BY_KEY)}")


def _resource_doc(r: ResourceType) -> list[dict[str, Any]]:
    doc: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        doc["shortNames"] = list(r.short_names)
    if r.categories:
        doc["categories"] = list(r.categories)
    out = [doc]
    for sub, kind in r.subresources.items():
        verbs = ["create"] if sub in ("binding", "eviction") else list(_SUB_RW)
        group_kind: dict[str, Any] = {}
        if sub == "eviction":
            group_kind = {"group": "policy", "version": "v1"}
        out.append(
            {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
                **group_kind,
            }
        )
    return out


def api_versions(server_address: str) -> dict[str, Any]:
    """``GET /api``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    """``GET /api/v1`` or ``GET /apis/G/V``; ``None`` if the group/version is not served."""
    types = [r for r in RESOURCES if r.group == group and r.version == version]
    if not types:
        return None
    gv = f"{group}/{version}" if group else version
    resources = [d for r in types for d in _resource_doc(r)]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _group_doc(group: str) -> dict[str, Any]:
    version = GROUPS[group]
    gv = {"groupVersion": f"{group}/{version}", "version": version}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


def group_list() -> dict[str, Any]:
    """``GET /apis``."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_doc(g) for g in sorted(GROUPS)]}


def group(name: str) -> dict[str, Any] | None:
    """``GET /apis/G``."""
    if name not in GROUPS:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(name)}
