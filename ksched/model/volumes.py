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

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote, urlsplit

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
"""csi-translation-lib's in-tree plugins (``IsInlineMigratable``, ``IsPVMigratable``,
``IsMigratableIntreePluginByName``): plugin name -> CSI driver name (``GetCSINameFromInTreeName``)."""

MIGRATION_ON: Final = frozenset({AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX})
"""Plugins whose CSI migration NodeVolumeLimits honours in v1.35 (``isCSIMigrationOn``): on every
node that has a CSINode object, whatever its ``migrated-plugins`` annotation says (the annotation
check went with the last migration feature gate). Azure File and vSphere translate, but their
volumes are counted nowhere."""

GCE_UNSPECIFIED: Final = "UNSPECIFIED"
BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
ZONE: Final = "topology.kubernetes.io/zone"
_EBS_VOLUME_ID: Final = re.compile(r"^vol-[^/]*$")

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
    """GCE PD: the ``zones/<zone>`` or ``regions/<region>`` part of its CSI handle (a PV's, from
    its zone label); empty inline, where the translator writes ``zones/UNSPECIFIED``."""
    translation_error: str = ""
    """Why csi-translation-lib refuses to translate this source (upstream's error text); empty
    when it translates."""

    @property
    def migratable(self) -> bool:
        """csi-translation-lib has a translator for it (``IsInlineMigratable`` / ``IsPVMigratable``)."""
        return self.plugin in CSI_DRIVER_OF

    @property
    def migrated_driver(self) -> str:
        """The CSI driver this source migrates to when its migration is on, else ``""``."""
        return CSI_DRIVER_OF[self.plugin] if self.plugin in MIGRATION_ON else ""

    @property
    def csi_handle(self) -> str:
        """The CSI volume handle csi-translation-lib gives this source; ``""`` when it refuses to
        translate it (:attr:`translation_error`)."""
        if self.translation_error:
            return ""
        if self.plugin == AWS_EBS:
            return ebs_volume_id(self.disk)
        if self.plugin == GCE_PD:
            zone = self.zone or f"zones/{GCE_UNSPECIFIED}"
            return f"projects/{GCE_UNSPECIFIED}/{zone}/disks/{self.disk}"
        return self.disk


def ebs_volume_id(volume_id: str) -> str:
    """The EBS translator's ``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/vol-123`` and
    ``aws:///vol-123`` -> ``vol-123``, a bare ID as it is; ValueError (upstream's text) for an
    ``aws://`` URL whose path is not ``vol-...``."""
    if not volume_id.startswith("aws://"):
        return volume_id
    path = unquote(urlsplit(volume_id).path).strip("/")
    if not _EBS_VOLUME_ID.match(path):
        raise ValueError(f"Invalid format for AWS volume ({volume_id})")
    return path


def _translation_error(plugin: str, disk: str, azure_kind: str | None) -> str:
    """What csi-translation-lib says when it cannot translate the source (``""``: it can)."""
    if plugin == AWS_EBS:
        try:
            ebs_volume_id(disk)
        except ValueError as exc:
            return f"failed to translate Kubernetes ID to EBS Volume ID {exc}"
    elif plugin == AZURE_DISK and azure_kind is not None and azure_kind.lower() != "managed":
        return f"kind({azure_kind}) is not supported in csi migration"
    return ""


def gce_zone(labels: Mapping[str, str]) -> tuple[str, str]:
    """The GCE PD translator's zone part of a PV's CSI handle, from its zone label (the beta one
    first, as it reads them): ``(zones/<z> | regions/<r> | "", error)``. Several zones
    (``a__b``) make a regional disk, whose region every zone (``<locale>-<region>-<zone>``) must
    agree on."""
    value = labels.get(BETA_ZONE) or labels.get(ZONE, "")
    zones = value.split("__")
    if len(zones) == 1:
        return (f"zones/{zones[0]}", "") if zones[0] else ("", "")
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            return "", (
                "failed to get region from zones: zone in unexpected format, expected:"
                f" {{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add(f"{parts[0]}-{parts[1]}")
    if len(regions) != 1:
        found = " ".join(f"{r}:{{}}" for r in sorted(regions))
        return "", (
            f"failed to get region from zones: multiple or no regions gotten from zones, got: map[{found}]"
        )
    return f"regions/{regions.pop()}", ""


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
        kind = None
        if plugin == AZURE_DISK and src.get("kind") is not None:
            kind = f.string(src.get("kind"), obj, f"{path}.{key}.kind")
        return InTreeSource(plugin, disk, read_only, translation_error=_translation_error(plugin, disk, kind))
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
