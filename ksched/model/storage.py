"""Compact records of the storage objects the volume plugins read, built from raw API JSON.

PersistentVolumes and PersistentVolumeClaims keep their raw object as well: VolumeBinding's PreBind
writes them back whole (an ``Update``, as upstream does, so the API server's optimistic concurrency
on ``resourceVersion`` guards the write). Everything else is parsed and checked once, here, and a
malformed field is an :class:`~ksched.errors.ObjectError` naming the object and the field.

Quantities are kept exact where upstream compares ``resource.Quantity`` values (a PV's capacity
against a claim's request: ``Fraction``) and as rounded-up integers where upstream calls
``Value()`` (CSIStorageCapacity against the request in bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Final

from ksched.errors import ObjectError, describe_object
from ksched.model import _fields as f
from ksched.model.quantity import parse_quantity
from ksched.model.selectors import LabelSelector, NodeSelectorTerm, parse_label_selector, parse_term
from ksched.model.volumes import InTreeSource, gce_zone, parse_in_tree

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_STORAGE_CLASS_BETA: Final = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS: Final = "storage.alpha.kubernetes.io/migrated-plugins"
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
IMMEDIATE: Final = "Immediate"
ACCESS_MODES: Final = frozenset({"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"})
FILESYSTEM: Final = "Filesystem"
BLOCK: Final = "Block"


def _meta(raw: Any, kind: str, namespaced: bool) -> tuple[Mapping[str, Any], Mapping[str, Any], str, str]:
    """(top, metadata, namespace, name) of an object, with the name required."""
    top = f.mapping(raw, kind, "")
    meta = f.mapping(top.get("metadata"), kind, "metadata")
    namespace = ""
    if namespaced:
        namespace = f.string(meta.get("namespace"), kind, "metadata.namespace", "default") or "default"
    name = f.string(meta.get("name"), kind, "metadata.name")
    if not name:
        raise ObjectError(describe_object(kind, namespace, ""), "metadata.name", f"a {kind} needs a name")
    return top, meta, namespace, name


def _resource_version(meta: Mapping[str, Any], obj: str) -> int:
    """``metadata.resourceVersion`` as the integer upstream's versioner compares (0 when absent)."""
    text = f.string(meta.get("resourceVersion"), obj, "metadata.resourceVersion")
    if not text:
        return 0
    if not text.isdigit() or len(text) > 20:
        raise ObjectError(obj, "metadata.resourceVersion", f"{text!r:.40} is not an unsigned integer")
    return int(text)


def _access_modes(raw: Any, obj: str, field: str) -> frozenset[str]:
    modes = []
    for i, m in enumerate(f.sequence(raw, obj, field)):
        mode = f.string(m, obj, f"{field}[{i}]")
        if mode not in ACCESS_MODES:
            raise ObjectError(
                obj, f"{field}[{i}]", f"{mode!r:.40} is not one of {', '.join(sorted(ACCESS_MODES))}"
            )
        modes.append(mode)
    return frozenset(modes)


def _volume_mode(raw: Any, obj: str, field: str) -> str:
    mode = f.string(raw, obj, field) or FILESYSTEM
    if mode not in (FILESYSTEM, BLOCK):
        raise ObjectError(obj, field, f"{mode!r:.40} is not Filesystem or Block")
    return mode


def _storage(raw: Any, obj: str, field: str) -> Fraction | None:
    """A ``storage`` quantity, exact; absent gives None."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ObjectError(obj, field, f"expected a quantity, got {type(raw).__name__}")
    q = parse_quantity(raw, obj=obj, field=field)
    if q < 0:
        raise ObjectError(obj, field, f"invalid quantity {raw!r:.40}: must not be negative")
    return q


def value_of(q: Fraction) -> int:
    """``resource.Quantity.Value()``: the integer value, rounded up."""
    return -((-q.numerator) // q.denominator)


# --------------------------------------------------------------------------- PersistentVolume
@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class CSISource:
    driver: str
    volume_handle: str
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    """One PV. Immutable: an update (or an assumed binding) builds a new record."""

    name: str
    uid: str
    resource_version: int
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    storage_class: str
    """The beta annotation when present (even empty), else ``spec.storageClassName`` (upstream
    ``GetPersistentVolumeClass``)."""
    capacity: Fraction | None
    access_modes: frozenset[str]
    volume_mode: str
    claim_ref: ClaimRef | None
    phase: str
    node_affinity: tuple[NodeSelectorTerm, ...] | None
    """``spec.nodeAffinity.required.nodeSelectorTerms`` (ORed); None when there is no requirement."""
    csi: CSISource | None
    in_tree: InTreeSource | None
    deleting: bool
    volume_attributes_class: str | None
    raw: Mapping[str, Any]

    @property
    def described(self) -> str:
        return describe_object("PersistentVolume", "", self.name)


def _claim_ref(raw: Any, obj: str) -> ClaimRef | None:
    if raw is None:
        return None
    m = f.mapping(raw, obj, "spec.claimRef")
    return ClaimRef(
        f.string(m.get("namespace"), obj, "spec.claimRef.namespace"),
        f.string(m.get("name"), obj, "spec.claimRef.name"),
        f.string(m.get("uid"), obj, "spec.claimRef.uid"),
    )


def _pv_node_affinity(raw: Any, obj: str) -> tuple[NodeSelectorTerm, ...] | None:
    na = f.mapping(raw, obj, "spec.nodeAffinity")
    if na.get("required") is None:
        return None
    req = f.mapping(na.get("required"), obj, "spec.nodeAffinity.required")
    path = "spec.nodeAffinity.required.nodeSelectorTerms"
    return tuple(
        parse_term(t, obj, f"{path}[{i}]")
        for i, t in enumerate(f.sequence(req.get("nodeSelectorTerms"), obj, path))
    )


def _csi_source(raw: Any, obj: str) -> CSISource | None:
    if raw is None:
        return None
    m = f.mapping(raw, obj, "spec.csi")
    return CSISource(
        f.string(m.get("driver"), obj, "spec.csi.driver"),
        f.string(m.get("volumeHandle"), obj, "spec.csi.volumeHandle"),
        f.boolean(m.get("readOnly"), obj, "spec.csi.readOnly"),
    )


def _gce_zone(src: InTreeSource, labels: Mapping[str, str]) -> InTreeSource:
    """A GCE PD PV's CSI handle names its zone (or region, when regional) from the PV's zone label."""
    zone, problem = gce_zone(labels)
    return replace(src, zone=zone, translation_error=problem) if zone or problem else src


def pv_from_dict(raw: Any) -> PersistentVolume:
    """Build a :class:`PersistentVolume` from API JSON; raise :class:`ObjectError` naming the field."""
    kind = "PersistentVolume"
    top, meta, _, name = _meta(raw, kind, namespaced=False)
    obj = describe_object(kind, "", name)
    spec = f.mapping(top.get("spec"), obj, "spec")
    status = f.mapping(top.get("status"), obj, "status")
    labels = f.string_map(meta.get("labels"), obj, "metadata.labels")
    annotations = f.string_map(meta.get("annotations"), obj, "metadata.annotations")
    capacity = f.mapping(spec.get("capacity"), obj, "spec.capacity")
    in_tree = parse_in_tree(spec, obj, "spec")
    if in_tree is not None and in_tree.plugin == "kubernetes.io/gce-pd":
        in_tree = _gce_zone(in_tree, labels)
    vac = spec.get("volumeAttributesClassName")
    return PersistentVolume(
        name=name,
        uid=f.string(meta.get("uid"), obj, "metadata.uid") or name,
        resource_version=_resource_version(meta, obj),
        labels=labels,
        annotations=annotations,
        storage_class=annotations[ANN_STORAGE_CLASS_BETA]
        if ANN_STORAGE_CLASS_BETA in annotations
        else f.string(spec.get("storageClassName"), obj, "spec.storageClassName"),
        capacity=_storage(capacity.get("storage"), obj, "spec.capacity.storage"),
        access_modes=_access_modes(spec.get("accessModes"), obj, "spec.accessModes"),
        volume_mode=_volume_mode(spec.get("volumeMode"), obj, "spec.volumeMode"),
        claim_ref=_claim_ref(spec.get("claimRef"), obj),
        phase=f.string(status.get("phase"), obj, "status.phase"),
        node_affinity=_pv_node_affinity(spec.get("nodeAffinity"), obj),
        csi=_csi_source(spec.get("csi"), obj),
        in_tree=in_tree,
        deleting=meta.get("deletionTimestamp") is not None,
        volume_attributes_class=None if vac is None else f.string(vac, obj, "spec.volumeAttributesClassName"),
        raw=top,
    )


# --------------------------------------------------------------------------- PersistentVolumeClaim
@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """One PVC. Immutable: an update (or an assumed selected node) builds a new record."""

    namespace: str
    name: str
    uid: str
    resource_version: int
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    storage_class: str
    """The beta annotation when set, else ``spec.storageClassName`` (``GetPersistentVolumeClaimClass``);
    ``""`` means no class."""
    volume_name: str
    access_modes: frozenset[str]
    volume_mode: str
    request: Fraction | None
    """``spec.resources.requests.storage``; None when absent."""
    selector: LabelSelector | None
    phase: str
    deleting: bool
    controller_uid: str
    """The uid in the ``controller: true`` ownerReference (generic ephemeral volumes: the pod's)."""
    volume_attributes_class: str | None
    raw: Mapping[str, Any]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def described(self) -> str:
        return describe_object("PersistentVolumeClaim", self.namespace, self.name)

    @property
    def selected_node(self) -> str | None:
        return self.annotations.get(ANN_SELECTED_NODE)

    @property
    def fully_bound(self) -> bool:
        """Upstream ``isPVCFullyBound``: a volume name and the bind-completed annotation."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations


def _controller_uid(meta: Mapping[str, Any], obj: str) -> str:
    for i, ref in enumerate(f.sequence(meta.get("ownerReferences"), obj, "metadata.ownerReferences")):
        path = f"metadata.ownerReferences[{i}]"
        rm = f.mapping(ref, obj, path)
        if f.boolean(rm.get("controller"), obj, f"{path}.controller"):
            return f.string(rm.get("uid"), obj, f"{path}.uid")
    return ""


def pvc_from_dict(raw: Any) -> PersistentVolumeClaim:
    """Build a :class:`PersistentVolumeClaim` from API JSON; raise :class:`ObjectError` naming the field."""
    kind = "PersistentVolumeClaim"
    top, meta, namespace, name = _meta(raw, kind, namespaced=True)
    obj = describe_object(kind, namespace, name)
    spec = f.mapping(top.get("spec"), obj, "spec")
    status = f.mapping(top.get("status"), obj, "status")
    annotations = f.string_map(meta.get("annotations"), obj, "metadata.annotations")
    resources = f.mapping(spec.get("resources"), obj, "spec.resources")
    requests = f.mapping(resources.get("requests"), obj, "spec.resources.requests")
    beta = annotations.get(ANN_STORAGE_CLASS_BETA)
    vac = spec.get("volumeAttributesClassName")
    return PersistentVolumeClaim(
        namespace=namespace,
        name=name,
        uid=f.string(meta.get("uid"), obj, "metadata.uid") or f"{namespace}/{name}",
        resource_version=_resource_version(meta, obj),
        labels=f.string_map(meta.get("labels"), obj, "metadata.labels"),
        annotations=annotations,
        storage_class=beta
        if beta is not None
        else f.string(spec.get("storageClassName"), obj, "spec.storageClassName"),
        volume_name=f.string(spec.get("volumeName"), obj, "spec.volumeName"),
        access_modes=_access_modes(spec.get("accessModes"), obj, "spec.accessModes"),
        volume_mode=_volume_mode(spec.get("volumeMode"), obj, "spec.volumeMode"),
        request=_storage(requests.get("storage"), obj, "spec.resources.requests.storage"),
        selector=parse_label_selector(spec.get("selector"), obj, "spec.selector"),
        phase=f.string(status.get("phase"), obj, "status.phase"),
        deleting=meta.get("deletionTimestamp") is not None,
        controller_uid=_controller_uid(meta, obj) if meta.get("ownerReferences") else "",
        volume_attributes_class=None if vac is None else f.string(vac, obj, "spec.volumeAttributesClassName"),
        raw=top,
    )


# --------------------------------------------------------------------------- StorageClass
@dataclass(frozen=True, slots=True)
class TopologyTerm:
    """One ``allowedTopologies`` entry: every (key, values) requirement must hold."""

    requirements: tuple[tuple[str, frozenset[str]], ...]


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str
    binding_mode: str | None
    """``volumeBindingMode``; None when unset (upstream reports that as an error)."""
    allowed_topologies: tuple[TopologyTerm, ...]
    reclaim_policy: str

    @property
    def described(self) -> str:
        return describe_object("StorageClass", "", self.name)


def storage_class_from_dict(raw: Any) -> StorageClass:
    kind = "StorageClass"
    top, _, _, name = _meta(raw, kind, namespaced=False)
    obj = describe_object(kind, "", name)
    mode = top.get("volumeBindingMode")
    terms = []
    for i, t in enumerate(f.sequence(top.get("allowedTopologies"), obj, "allowedTopologies")):
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        reqs = []
        for j, e in enumerate(
            f.sequence(f.mapping(t, obj, f"allowedTopologies[{i}]").get("matchLabelExpressions"), obj, path)
        ):
            em = f.mapping(e, obj, f"{path}[{j}]")
            key = f.string(em.get("key"), obj, f"{path}[{j}].key")
            values = f.sequence(em.get("values"), obj, f"{path}[{j}].values")
            reqs.append(
                (key, frozenset(f.string(v, obj, f"{path}[{j}].values[{k}]") for k, v in enumerate(values)))
            )
        terms.append(TopologyTerm(tuple(reqs)))
    return StorageClass(
        name=name,
        provisioner=f.string(top.get("provisioner"), obj, "provisioner"),
        binding_mode=None if mode is None else f.string(mode, obj, "volumeBindingMode"),
        allowed_topologies=tuple(terms),
        reclaim_policy=f.string(top.get("reclaimPolicy"), obj, "reclaimPolicy", "Delete"),
    )


# --------------------------------------------------------------------------- CSINode, CSIDriver
@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str
    topology_keys: tuple[str, ...]
    allocatable_count: int | None
    """``allocatable.count``: how many of this driver's volumes the node may attach (None: no limit)."""


@dataclass(frozen=True, slots=True)
class CSINode:
    name: str
    drivers: Mapping[str, CSINodeDriver]
    migrated_plugins: frozenset[str]
    """The ``storage.alpha.kubernetes.io/migrated-plugins`` annotation, split on commas."""

    def limits(self) -> dict[str, int]:
        """Upstream ``getVolumeLimits``: driver -> allocatable count, for drivers that set one."""
        return {d.name: d.allocatable_count for d in self.drivers.values() if d.allocatable_count is not None}

    def migrated(self, plugin: str) -> bool:
        """Upstream ``isCSIMigrationOn`` for this node."""
        return plugin in self.migrated_plugins


def csi_node_from_dict(raw: Any) -> CSINode:
    kind = "CSINode"
    top, meta, _, name = _meta(raw, kind, namespaced=False)
    obj = describe_object(kind, "", name)
    spec = f.mapping(top.get("spec"), obj, "spec")
    drivers: dict[str, CSINodeDriver] = {}
    for i, d in enumerate(f.sequence(spec.get("drivers"), obj, "spec.drivers")):
        path = f"spec.drivers[{i}]"
        dm = f.mapping(d, obj, path)
        alloc = f.mapping(dm.get("allocatable"), obj, f"{path}.allocatable")
        count = alloc.get("count")
        driver = CSINodeDriver(
            name=f.string(dm.get("name"), obj, f"{path}.name"),
            node_id=f.string(dm.get("nodeID"), obj, f"{path}.nodeID"),
            topology_keys=tuple(
                f.string(k, obj, f"{path}.topologyKeys[{j}]")
                for j, k in enumerate(f.sequence(dm.get("topologyKeys"), obj, f"{path}.topologyKeys"))
            ),
            allocatable_count=None
            if count is None
            else f.integer(count, obj, f"{path}.allocatable.count", lo=0, hi=2**31 - 1),
        )
        drivers[driver.name] = driver
    annotations = f.string_map(meta.get("annotations"), obj, "metadata.annotations")
    migrated = annotations.get(ANN_MIGRATED_PLUGINS, "")
    return CSINode(name, drivers, frozenset(p for p in migrated.split(",") if p) if migrated else frozenset())


@dataclass(frozen=True, slots=True)
class CSIDriver:
    name: str
    storage_capacity: bool
    attach_required: bool


def csi_driver_from_dict(raw: Any) -> CSIDriver:
    kind = "CSIDriver"
    top, _, _, name = _meta(raw, kind, namespaced=False)
    obj = describe_object(kind, "", name)
    spec = f.mapping(top.get("spec"), obj, "spec")
    return CSIDriver(
        name,
        f.boolean(spec.get("storageCapacity"), obj, "spec.storageCapacity"),
        f.boolean(spec.get("attachRequired"), obj, "spec.attachRequired", True),
    )


# --------------------------------------------------------------------------- CSIStorageCapacity
@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    namespace: str
    name: str
    storage_class: str
    node_topology: LabelSelector | None
    """None: the capacity is reachable from no node."""
    capacity: int | None
    maximum_volume_size: int | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def sufficient(self, size: int) -> bool:
        """Upstream ``capacitySufficient``: maximumVolumeSize when set, else capacity, must hold ``size``."""
        limit = self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity
        return limit is not None and limit >= size


def csi_storage_capacity_from_dict(raw: Any) -> CSIStorageCapacity:
    kind = "CSIStorageCapacity"
    top, _, namespace, name = _meta(raw, kind, namespaced=True)
    obj = describe_object(kind, namespace, name)

    def size(field: str) -> int | None:
        q = _storage(top.get(field), obj, field)
        return None if q is None else value_of(q)

    return CSIStorageCapacity(
        namespace=namespace,
        name=name,
        storage_class=f.string(top.get("storageClassName"), obj, "storageClassName"),
        node_topology=parse_label_selector(top.get("nodeTopology"), obj, "nodeTopology"),
        capacity=size("capacity"),
        maximum_volume_size=size("maximumVolumeSize"),
    )


# --------------------------------------------------------------------------- VolumeAttachment
@dataclass(frozen=True, slots=True)
class VolumeAttachment:
    name: str
    attacher: str
    node_name: str
    pv_name: str
    """``spec.source.persistentVolumeName``; empty for an inline (migrated) source."""


def volume_attachment_from_dict(raw: Any) -> VolumeAttachment:
    kind = "VolumeAttachment"
    top, _, _, name = _meta(raw, kind, namespaced=False)
    obj = describe_object(kind, "", name)
    spec = f.mapping(top.get("spec"), obj, "spec")
    source = f.mapping(spec.get("source"), obj, "spec.source")
    return VolumeAttachment(
        name,
        f.string(spec.get("attacher"), obj, "spec.attacher"),
        f.string(spec.get("nodeName"), obj, "spec.nodeName"),
        f.string(source.get("persistentVolumeName"), obj, "spec.source.persistentVolumeName"),
    )


DECODERS: Final[Mapping[str, tuple[str, Any]]] = {
    "PersistentVolume": ("persistentvolumes", pv_from_dict),
    "PersistentVolumeClaim": ("persistentvolumeclaims", pvc_from_dict),
    "StorageClass": ("storageclasses", storage_class_from_dict),
    "CSINode": ("csinodes", csi_node_from_dict),
    "CSIDriver": ("csidrivers", csi_driver_from_dict),
    "CSIStorageCapacity": ("csistoragecapacities", csi_storage_capacity_from_dict),
    "VolumeAttachment": ("volumeattachments", volume_attachment_from_dict),
}
"""Kind -> (informer resource, decoder): what ``ksched explain`` and the runner read."""
