"""The volumes of a pod that the volume plugins look at, and in-tree volume sources.

The four volume plugins care about three kinds of ``spec.volumes`` entries and nothing else (a
``configMap``, ``secret``, ``emptyDir``, ``hostPath`` or CSI inline volume is none of their business):

- a ``persistentVolumeClaim`` (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits);
- a generic ``ephemeral`` volume, whose claim is named ``<pod>-<volume>`` and must be owned by the
  pod (upstream ``ephemeral.VolumeClaimName`` / ``VolumeIsForPod``);
- an in-tree disk source: GCE PD, AWS EBS, iSCSI and RBD for VolumeRestrictions' disk conflicts;
  the in-tree sources that migrate to a CSI driver (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx)
  for NodeVolumeLimits, which counts them under the driver once the node's CSINode says the plugin
  is migrated;
- an inline ``csi`` volume, by driver (VolumeBinding's CSIDriver queueing hint reads it).

:class:`InTreeSource` is shared with PersistentVolumes (``ksched.model.storage``): a PV's in-tree
source is read the same way and translated to the same CSI driver and volume handle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ksched.model import _fields as f

GCE_PD: Final = "kubernetes.io/gce-pd"
AWS_EBS: Final = "kubernetes.io/aws-ebs"
AZURE_DISK: Final = "kubernetes.io/azure-disk"
CINDER: Final = "kubernetes.io/cinder"
PORTWORX: Final = "kubernetes.io/portworx-volume"
AZURE_FILE: Final = "kubernetes.io/azure-file"
VSPHERE: Final = "kubernetes.io/vsphere-volume"
ISCSI: Final = "kubernetes.io/iscsi"
RBD: Final = "kubernetes.io/rbd"

CSI_DRIVER_OF: Final[Mapping[str, str]] = {
    AWS_EBS: "ebs.csi.aws.com",
    GCE_PD: "pd.csi.storage.gke.io",
    AZURE_DISK: "disk.csi.azure.com",
    CINDER: "cinder.csi.openstack.org",
    PORTWORX: "pxd.portworx.com",
    AZURE_FILE: "file.csi.azure.com",
    VSPHERE: "csi.vsphere.vmware.com",
}
"""csi-translation-lib's in-tree plugin name -> CSI driver name (``GetCSINameFromInTreeName``)."""

MIGRATION_ON: Final = frozenset({AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX})
"""Plugins whose CSI migration is on in v1.35 (``isCSIMigrationOn``); Azure File and vSphere
translate but the scheduler does not count them."""

_SOURCE_FIELDS: Final[Mapping[str, tuple[str, str]]] = {
    "gcePersistentDisk": (GCE_PD, "pdName"),
    "awsElasticBlockStore": (AWS_EBS, "volumeID"),
    "azureDisk": (AZURE_DISK, "diskURI"),
    "cinder": (CINDER, "volumeID"),
    "portworxVolume": (PORTWORX, "volumeID"),
    "azureFile": (AZURE_FILE, "shareName"),
    "vsphereVolume": (VSPHERE, "volumePath"),
    "iscsi": (ISCSI, "iqn"),
    "rbd": (RBD, "image"),
}
"""Volume source field -> (plugin name, the field that identifies the disk)."""


@dataclass(frozen=True, slots=True)
class InTreeSource:
    """An in-tree volume source, as much of it as conflicts and CSI translation need."""

    plugin: str
    """Upstream plugin name (``kubernetes.io/aws-ebs``)."""
    disk: str
    """What identifies the disk: pdName, volumeID, diskURI, IQN, RBD image, ..."""
    read_only: bool = False
    pool: str = ""
    """RBD pool."""
    monitors: frozenset[str] = frozenset()
    """RBD monitors (two RBD sources conflict when their monitor sets overlap)."""
    zone: str = ""
    """GCE PD: the zone (or ``region`` for a regional disk) its CSI handle names; empty inline."""

    @property
    def migrated_driver(self) -> str:
        """The CSI driver this source migrates to when its migration is on, else ``""``."""
        return CSI_DRIVER_OF[self.plugin] if self.plugin in MIGRATION_ON else ""

    @property
    def csi_handle(self) -> str:
        """The CSI volume handle csi-translation-lib gives this source (for counting, unique per disk)."""
        if self.plugin == AWS_EBS:
            return ebs_volume_id(self.disk)
        if self.plugin == GCE_PD:
            zone = self.zone or "zones/UNSPECIFIED"
            return f"projects/UNSPECIFIED/{zone}/disks/{self.disk}"
        return self.disk


def ebs_volume_id(volume_id: str) -> str:
    """``aws://<zone>/vol-123`` (the Kubernetes form) -> ``vol-123``, as the EBS translator does."""
    if volume_id.startswith("aws://"):
        return volume_id.rsplit("/", 1)[-1]
    return volume_id


def parse_in_tree(vm: Mapping[str, Any], obj: str, path: str) -> InTreeSource | None:
    """The in-tree source of a volume (``spec.volumes[i]`` or a PV's spec), if it has one we know."""
    for key, (plugin, id_field) in _SOURCE_FIELDS.items():
        raw = vm.get(key)
        if raw is None:
            continue
        src = f.mapping(raw, obj, f"{path}.{key}")
        disk = f.string(src.get(id_field), obj, f"{path}.{key}.{id_field}")
        read_only = f.boolean(src.get("readOnly"), obj, f"{path}.{key}.readOnly")
        if plugin == RBD:
            monitors = f.sequence(src.get("monitors"), obj, f"{path}.rbd.monitors")
            return InTreeSource(
                plugin,
                disk,
                read_only,
                pool=f.string(src.get("pool"), obj, f"{path}.rbd.pool", "rbd"),
                monitors=frozenset(
                    f.string(m, obj, f"{path}.rbd.monitors[{i}]") for i, m in enumerate(monitors)
                ),
            )
        return InTreeSource(plugin, disk, read_only)
    return None


PVC: Final = "persistentVolumeClaim"
EPHEMERAL: Final = "ephemeral"
IN_TREE: Final = "inTree"
CSI: Final = "csi"


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One ``spec.volumes`` entry that a volume plugin reads."""

    name: str
    kind: str
    """:data:`PVC`, :data:`EPHEMERAL` (a generic ephemeral volume: its claim must be owned by the
    pod), :data:`IN_TREE` (an inline in-tree source) or :data:`CSI` (an inline CSI volume)."""
    claim: str = ""
    """The PVC's name: ``persistentVolumeClaim.claimName`` (may be empty: upstream reports that),
    or ``<pod>-<volume>`` when ephemeral."""
    read_only: bool = False
    """``persistentVolumeClaim.readOnly``."""
    in_tree: InTreeSource | None = None
    driver: str = ""
    """``csi.driver`` of an inline CSI volume."""

    @property
    def uses_claim(self) -> bool:
        return self.kind in (PVC, EPHEMERAL)

    @property
    def ephemeral(self) -> bool:
        return self.kind == EPHEMERAL


def parse_pod_volumes(raw: Any, obj: str, pod_name: str) -> tuple[PodVolume, ...]:
    """The volume-plugin-relevant entries of ``spec.volumes``, in order; the rest are left out."""
    if not raw:
        return ()
    out = []
    for i, v in enumerate(f.sequence(raw, obj, "spec.volumes")):
        path = f"spec.volumes[{i}]"
        vm = f.mapping(v, obj, path)
        name = f.string(vm.get("name"), obj, f"{path}.name")
        pvc = vm.get("persistentVolumeClaim")
        if pvc is not None:
            pm = f.mapping(pvc, obj, f"{path}.persistentVolumeClaim")
            claim = f.string(pm.get("claimName"), obj, f"{path}.persistentVolumeClaim.claimName")
            ro = f.boolean(pm.get("readOnly"), obj, f"{path}.persistentVolumeClaim.readOnly")
            out.append(PodVolume(name, PVC, claim=claim, read_only=ro))
        elif vm.get("ephemeral") is not None:
            f.mapping(vm.get("ephemeral"), obj, f"{path}.ephemeral")
            out.append(PodVolume(name, EPHEMERAL, claim=f"{pod_name}-{name}"))
        elif (src := parse_in_tree(vm, obj, path)) is not None:
            out.append(PodVolume(name, IN_TREE, in_tree=src))
        elif vm.get("csi") is not None:
            cm = f.mapping(vm.get("csi"), obj, f"{path}.csi")
            out.append(PodVolume(name, CSI, driver=f.string(cm.get("driver"), obj, f"{path}.csi.driver")))
    return tuple(out)
