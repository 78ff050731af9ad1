"""Which volumes a pod attaches to a node, as NodeVolumeLimits counts them.

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (``filterAttachableVolumes``,
``getCSIDriverInfo``, ``getCSIDriverInfoFromSC``, ``checkAttachableInlineVolume``) and ``utils.go``
(``isCSIMigrationOn``). A volume is known by ``(driver, handle)``, upstream's ``<driver>/<handle>``:

- a claim bound to a PV (the informer's version, not an assumed one) with a CSI source: its driver
  and volume handle; with an in-tree source that migrates (AWS EBS, GCE PD, Azure Disk, Cinder,
  Portworx): the translated driver and handle, on a node that has a CSINode object;
- a claim not bound yet, or bound to a PV not in the cache: its StorageClass's provisioner
  (translated when it is a migrating in-tree plugin) and a handle of the claim's own,
  :class:`UnboundClaim`, where upstream makes one up from a random prefix and ``<ns>/<name>``;
- a generic ephemeral volume: its claim ``<pod>-<volume>``, which must be owned by the pod;
- an inline in-tree volume that migrates: its translated driver and handle, on a node with a
  CSINode.

Migration is on for those five plugins on every node that has a CSINode object and on no other
node, so a pod's volumes depend on its node only through whether the node has a CSINode:
:func:`attachable` takes that as ``csi_node``. Nothing here depends on the node's limits.

A pod being scheduled (``new_pod``) must have its claims; a missing one is an error upstream turns
into UnschedulableAndUnresolvable. For a pod already on a node a missing claim is simply not
counted. Other errors (an ephemeral claim the pod does not own, an inline volume the translator
refuses) stop the count for that pod, as upstream's loop returns on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ksched.cache.volumes import PERSISTENT_VOLUME_CLAIMS, VolumeStore
from ksched.model.pod import Pod
from ksched.model.storage import PersistentVolumeClaim
from ksched.model.volumes import CSI_DRIVER_OF, IN_TREE, MIGRATION_ON, PodVolume


@dataclass(frozen=True, slots=True)
class UnboundClaim:
    """The volume handle of a claim that is not bound yet (``namespace/name``): equal for every
    pod that uses the claim, different from every real handle (upstream's random prefix)."""

    key: str

    def __str__(self) -> str:
        return f"<unbound claim {self.key}>"


VolumeKey = tuple[str, "str | UnboundClaim"]
"""``(driver, handle)``: one attachable volume."""

NO_NAME: Final = "PersistentVolumeClaim had no name"


@dataclass(frozen=True, slots=True)
class Attachable:
    """What :func:`attachable` found for one pod on one kind of node."""

    volumes: tuple[VolumeKey, ...] = ()
    """Each attachable volume once, in the order the pod names them."""
    error: str = ""
    """Upstream's error for the first volume that could not be looked at (the count stops there)."""
    not_found: bool = False
    """The error is a claim the pod needs not being in the cache (UnschedulableAndUnresolvable)."""


@dataclass(slots=True)
class Lookups:
    """The storage objects :func:`attachable` looked up, found or not: a change of any of them can
    change its answer (the index recounts the pod then)."""

    claims: set[str]
    volumes: set[str]
    classes: set[str]

    @classmethod
    def empty(cls) -> Lookups:
        return cls(set(), set(), set())


def needs_count(pod: Pod) -> bool:
    """Upstream's PreFilter test: a claim, a generic ephemeral volume or an in-tree volume that
    csi-translation-lib can translate (Azure File and vSphere included, which are then not counted)."""
    return any(v.kind != IN_TREE or (v.in_tree is not None and v.in_tree.migratable) for v in pod.volumes)


def claim_missing(store: VolumeStore, key: str, name: str) -> str:
    """The lister's not-found text for claim ``key``, or the informer's problem with it."""
    return store.problem(PERSISTENT_VOLUME_CLAIMS, key) or f'persistentvolumeclaim "{name}" not found'


def attachable(
    pod: Pod, store: VolumeStore, *, csi_node: bool, new_pod: bool, lookups: Lookups | None = None
) -> Attachable:
    """The volumes ``pod`` attaches on a node that has (``csi_node``) or lacks a CSINode object."""
    found: dict[VolumeKey, None] = {}
    for v in pod.volumes:
        if v.kind == IN_TREE:
            src = v.in_tree
            if src is None or not src.migratable or not csi_node or src.plugin not in MIGRATION_ON:
                continue
            if src.translation_error:
                problem = src.translation_error
                return Attachable(error=f"converting volume({v.name}) from inline to csi: {problem}")
            found[(CSI_DRIVER_OF[src.plugin], src.csi_handle)] = None
            continue
        if not v.claim:
            return Attachable(error=NO_NAME)
        key = f"{pod.namespace}/{v.claim}"
        if lookups is not None:
            lookups.claims.add(key)
        pvc = store.pvcs.get_api(key)
        if pvc is None:
            if new_pod:
                missing = claim_missing(store, key, v.claim)
                return Attachable(error=f"looking up PVC {key}: {missing}", not_found=True)
            continue
        if v.ephemeral and not _owned(pvc, pod):
            return Attachable(error=not_owned(pvc, pod))
        driver, handle = _claim_volume(pvc, store, csi_node, lookups)
        if driver and handle:
            found[(driver, handle)] = None
    return Attachable(tuple(found))


def _owned(pvc: PersistentVolumeClaim, pod: Pod) -> bool:
    """``ephemeral.VolumeIsForPod``: same namespace, and the pod is the claim's controller."""
    return pvc.namespace == pod.namespace and bool(pvc.controller_uid) and pvc.controller_uid == pod.uid


def not_owned(pvc: PersistentVolumeClaim, pod: Pod) -> str:
    return (
        f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name}"
        " (pod is not owner)"
    )


def _claim_volume(
    pvc: PersistentVolumeClaim, store: VolumeStore, csi_node: bool, lookups: Lookups | None
) -> tuple[str, str | UnboundClaim]:
    """``getCSIDriverInfo``: the claim's driver and handle; ``("", "")`` when it is not counted."""
    if not pvc.volume_name:
        return _from_class(pvc, store, csi_node, lookups)
    if lookups is not None:
        lookups.volumes.add(pvc.volume_name)
    pv = store.pvs.get_api(pvc.volume_name)
    if pv is None:  # deleted, or the claim is pre-bound to a PV not created yet
        return _from_class(pvc, store, csi_node, lookups)
    if pv.csi is not None:
        return pv.csi.driver, pv.csi.volume_handle
    src = pv.in_tree
    if src is None or not src.migratable or not csi_node or src.plugin not in MIGRATION_ON:
        return "", ""
    if src.translation_error:
        return "", ""
    return CSI_DRIVER_OF[src.plugin], src.csi_handle


def _from_class(
    pvc: PersistentVolumeClaim, store: VolumeStore, csi_node: bool, lookups: Lookups | None
) -> tuple[str, str | UnboundClaim]:
    """``getCSIDriverInfoFromSC``: the class's provisioner and a handle of the claim's own."""
    name = pvc.storage_class
    if not name:  # no class: bound before scheduling (immediate binding), safe not to count
        return "", ""
    if lookups is not None:
        lookups.classes.add(name)
    sc = store.classes.get(name)
    if sc is None:
        return "", ""
    provisioner = sc.provisioner
    if provisioner in CSI_DRIVER_OF:
        if not csi_node or provisioner not in MIGRATION_ON:
            return "", ""
        provisioner = CSI_DRIVER_OF[provisioner]
    return provisioner, UnboundClaim(pvc.key)


def is_counted(v: PodVolume) -> bool:
    """Whether a volume can be counted at all (a claim, or an in-tree volume that migrates)."""
    return v.kind != IN_TREE or (v.in_tree is not None and v.in_tree.plugin in MIGRATION_ON)


__all__ = [
    "Attachable",
    "Lookups",
    "UnboundClaim",
    "VolumeKey",
    "attachable",
    "claim_missing",
    "is_counted",
    "needs_count",
    "not_owned",
]
