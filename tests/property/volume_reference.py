"""Plain-Python, one-node-at-a-time references for the volume plugins, written from upstream.

``csi_filter`` follows ``CSILimits.Filter`` (``nodevolumelimits/csi.go``) step by step: the new
pod's volumes into a map of ``"<driver>/<handle>"`` -> driver, the node's limits from its CSINode,
every pod on the node into a second map, the new volumes the pods already use deleted, the
VolumeAttachments of the node counted unless a pod has the volume, then the comparison per driver.
Unbound claims get upstream's random-prefix handle. It walks the node's pods through
``cache.pods_on`` and the store's objects directly: it shares no index with the plugin, only the
model's records (the translated in-tree handles are tested on their own).

``disk_filter`` is ``satisfyVolumeConflicts``: every inline disk of the new pod against every
volume of every pod on the node.
"""

from __future__ import annotations

from collections import Counter

from ksched.cache.cluster import ClusterCache
from ksched.model.pod import Pod
from ksched.model.storage import CSINode, PersistentVolumeClaim
from ksched.model.volumes import AWS_EBS, EPHEMERAL, GCE_PD, IN_TREE, ISCSI, PVC, RBD

RANDOM_PREFIX = "Zq8r1Xv0pLkT4mWn7sYb2cHd5fJg9aEu"
CSI_NAMES = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
}


def migration_on(csi_node: CSINode | None, plugin: str) -> bool:
    """``isCSIMigrationOn`` (v1.35)."""
    if csi_node is None or not plugin:
        return False
    return plugin in (
        "kubernetes.io/aws-ebs",
        "kubernetes.io/portworx-volume",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
    )


class Failed(Exception):
    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def _owned(pvc: PersistentVolumeClaim, pod: Pod) -> bool:
    return pvc.namespace == pod.namespace and pvc.controller_uid != "" and pvc.controller_uid == pod.uid


def filter_attachable(
    cache: ClusterCache, pod: Pod, csi_node: CSINode | None, new_pod: bool, result: dict[str, str]
) -> None:
    store = cache.volumes
    for vol in pod.volumes:
        if vol.kind == PVC:
            pvc_name, ephemeral = vol.claim, False
        elif vol.kind == EPHEMERAL:
            pvc_name, ephemeral = vol.claim, True
        else:
            src = vol.in_tree
            if src is None or src.plugin not in CSI_NAMES:  # IsInlineMigratable
                continue
            if not migration_on(csi_node, src.plugin):
                continue
            if src.translation_error:
                raise Failed(f"converting volume({vol.name}) from inline to csi: {src.translation_error}")
            result[f"{CSI_NAMES[src.plugin]}/{src.csi_handle}"] = CSI_NAMES[src.plugin]
            continue
        if pvc_name == "":
            raise Failed("PersistentVolumeClaim had no name")
        pvc = store.pvcs.get_api(f"{pod.namespace}/{pvc_name}")
        if pvc is None:
            if new_pod:
                missing = f'persistentvolumeclaim "{pvc_name}" not found'
                raise Failed(f"looking up PVC {pod.namespace}/{pvc_name}: {missing}", not_found=True)
            continue
        if ephemeral and not _owned(pvc, pod):
            raise Failed(
                f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name}"
                " (pod is not owner)"
            )
        driver, handle = csi_driver_info(cache, csi_node, pvc)
        if driver == "" or handle == "":
            continue
        result[f"{driver}/{handle}"] = driver


def csi_driver_info(
    cache: ClusterCache, csi_node: CSINode | None, pvc: PersistentVolumeClaim
) -> tuple[str, str]:
    store = cache.volumes
    if pvc.volume_name == "":
        return driver_info_from_class(cache, csi_node, pvc)
    pv = store.pvs.get_api(pvc.volume_name)
    if pv is None:
        return driver_info_from_class(cache, csi_node, pvc)
    if pv.csi is None:
        src = pv.in_tree
        if src is None or src.plugin not in CSI_NAMES:  # IsPVMigratable
            return "", ""
        if not migration_on(csi_node, src.plugin):
            return "", ""
        if src.translation_error:
            return "", ""
        return CSI_NAMES[src.plugin], src.csi_handle
    return pv.csi.driver, pv.csi.volume_handle


def driver_info_from_class(
    cache: ClusterCache, csi_node: CSINode | None, pvc: PersistentVolumeClaim
) -> tuple[str, str]:
    if pvc.storage_class == "":
        return "", ""
    sc = cache.volumes.classes.get(pvc.storage_class)
    if sc is None:
        return "", ""
    handle = f"{RANDOM_PREFIX}-{pvc.namespace}/{pvc.name}"
    if sc.provisioner in CSI_NAMES:  # IsMigratableIntreePluginByName
        if not migration_on(csi_node, sc.provisioner):
            return "", ""
        return CSI_NAMES[sc.provisioner], handle
    return sc.provisioner, handle


def node_attachments(cache: ClusterCache, node_name: str) -> dict[str, str]:
    """``getNodeVolumeAttachmentInfo``: the node's attachments, ``"<attacher>/<handle>"`` -> attacher."""
    out: dict[str, str] = {}
    for va in cache.volumes.attachments.values():
        if va.node_name != node_name or not va.attacher or not va.pv_name:
            continue
        pv = cache.volumes.pvs.get_api(va.pv_name)
        if pv is None or pv.csi is None:
            continue
        out[f"{va.attacher}/{pv.csi.volume_handle}"] = va.attacher
    return out


def attached_counts(cache: ClusterCache, node_name: str) -> Counter[str]:
    """Per driver, the distinct volumes the node's countable pods and its VolumeAttachments have
    (what Filter compares with the limit before adding the new pod's)."""
    csi_node = cache.volumes.csi_nodes.get(node_name)
    attached: dict[str, str] = {}
    for existing in cache.pods_on(node_name):
        mine: dict[str, str] = {}
        try:
            filter_attachable(cache, existing, csi_node, False, mine)
        except Failed:
            continue
        attached.update(mine)
    attached.update(node_attachments(cache, node_name))
    return Counter(attached.values())


def csi_filter(cache: ClusterCache, pod: Pod, node_name: str) -> tuple[str, str] | None:
    """``("Unschedulable" | "UnschedulableAndUnresolvable" | "Error", message)`` or None."""
    if not pod.volumes:
        return None
    csi_node = cache.volumes.csi_nodes.get(node_name)
    new: dict[str, str] = {}
    try:
        filter_attachable(cache, pod, csi_node, True, new)
    except Failed as exc:
        return ("UnschedulableAndUnresolvable" if exc.not_found else "Error", str(exc))
    if not new:
        return None
    limits = {} if csi_node is None else csi_node.limits()
    if not limits:
        return None
    attached: dict[str, str] = {}
    for existing in cache.pods_on(node_name):
        try:
            filter_attachable(cache, existing, csi_node, False, attached)
        except Failed as exc:
            return ("Error", str(exc))
    attached_count: Counter[str] = Counter()
    for unique, driver in attached.items():
        new.pop(unique, None)
        attached_count[driver] += 1
    attachments = node_attachments(cache, node_name)
    for unique, driver in attachments.items():
        if unique not in attached:
            attached_count[driver] += 1
    new_count = Counter(new.values())
    for driver, count in new_count.items():
        limit = limits.get(driver)
        if limit is not None and attached_count[driver] + count > limit:
            return ("Unschedulable", "node(s) exceed max volume count")
    return None


def _conflict(volume: object, existing: object) -> bool:
    a, b = volume, existing
    assert a is not None and b is not None
    if a.plugin == GCE_PD and b.plugin == GCE_PD:  # type: ignore[attr-defined]
        return a.disk == b.disk and not (a.read_only and b.read_only)  # type: ignore[attr-defined]
    if a.plugin == AWS_EBS and b.plugin == AWS_EBS:  # type: ignore[attr-defined]
        return a.disk == b.disk  # type: ignore[attr-defined]
    if a.plugin == ISCSI and b.plugin == ISCSI:  # type: ignore[attr-defined]
        return a.disk == b.disk and not (a.read_only and b.read_only)  # type: ignore[attr-defined]
    if a.plugin == RBD and b.plugin == RBD:  # type: ignore[attr-defined]
        overlap = bool(set(a.monitors) & set(b.monitors))  # type: ignore[attr-defined]
        same = a.pool == b.pool and a.disk == b.disk  # type: ignore[attr-defined]
        return overlap and same and not (a.read_only and b.read_only)  # type: ignore[attr-defined]
    return False


def disk_filter(cache: ClusterCache, pod: Pod, node_name: str) -> bool:
    """Whether the node has a disk conflict with the pod (``!satisfyVolumeConflicts``)."""
    for v in pod.volumes:
        if v.kind != IN_TREE or v.in_tree is None or v.in_tree.plugin not in (GCE_PD, AWS_EBS, ISCSI, RBD):
            continue
        for existing in cache.pods_on(node_name):
            for ev in existing.volumes:
                if ev.kind == IN_TREE and _conflict(v.in_tree, ev.in_tree):
                    return True
    return False


def claim_users(cache: ClusterCache) -> Counter[str]:
    """``namespace/claim`` -> volume entries naming it, of the pods on nodes (the snapshot's
    ``PVCRefCounts``, summed)."""
    out: Counter[str] = Counter()
    for entry in cache.pods.values():
        if entry.row >= 0:
            for v in entry.pod.volumes:
                if v.kind == PVC:
                    out[f"{entry.pod.namespace}/{v.claim}"] += 1
    return out


def rwop_filter(cache: ClusterCache, pod: Pod, users: Counter[str], removed: list[Pod]) -> str | bool:
    """VolumeRestrictions' ReadWriteOncePod part: "skip", "missing" (PreFilter rejects), or whether
    every node fails, with ``users`` taken before, and ``removed`` taken away by RemovePod since."""
    names = set()
    for v in pod.volumes:
        if v.kind != PVC:
            continue
        pvc = cache.volumes.pvcs.get_api(f"{pod.namespace}/{v.claim}")
        if pvc is None:
            return "missing"
        if "ReadWriteOncePod" in pvc.access_modes:
            names.add(pvc.name)
    conflicting = sum(1 for c in names if users[f"{pod.namespace}/{c}"] > 0)
    kinds = (GCE_PD, AWS_EBS, ISCSI, RBD)
    disks = any(
        v.kind == IN_TREE and v.in_tree is not None and v.in_tree.plugin in kinds for v in pod.volumes
    )
    if not disks and conflicting == 0:
        return "skip"
    for q in removed:
        conflicting -= sum(1 for v in q.volumes if v.kind == PVC and v.claim in names)
    return conflicting > 0
