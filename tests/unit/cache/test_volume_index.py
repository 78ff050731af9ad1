"""VolumeIndex: per-row attached volumes and inline disks follow pods, nodes and storage objects."""

from __future__ import annotations

from typing import Any

from ksched.cache.attachable import UnboundClaim
from ksched.cache.cluster import ClusterCache
from ksched.model.pod import Pod, pod_from_dict
from tests.builders import (
    claim_volume,
    cluster_of,
    inline_volume,
    make_csi_node,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    make_volume_attachment,
    node,
    store_objects,
)

EBS = "ebs.csi.aws.com"


def _bound(name: str, node: str, *volumes: dict[str, Any]) -> Pod:
    return pod_from_dict(make_pod(name, node_name=node, volumes=list(volumes)))


def _count(cache: ClusterCache, node: str, driver: str = EBS) -> int:
    index = cache.volume_index
    col = index.column(driver)
    row = cache.nodes.row_of[node]
    return 0 if col is None else int(index.counts[col, row])


def _cache() -> ClusterCache:
    cache = cluster_of([make_node("n0"), make_node("n1")])
    return store_objects(
        cache,
        [
            make_csi_node("n0", {EBS: 3}),
            make_pv("pv0", csi=(EBS, "h0")),
            make_pv("pv1", csi=(EBS, "h1")),
            make_pvc("c0", volume_name="pv0"),
            make_pvc("c1", volume_name="pv1"),
            make_pvc("late", storage_class="sc"),
            make_storage_class("sc", provisioner=EBS),
        ],
    )


def test_pods_count_distinct_volumes_per_row() -> None:
    cache = _cache()
    cache.add_pod(_bound("a", "n0", claim_volume("c0"), claim_volume("c1")))
    cache.add_pod(_bound("b", "n0", claim_volume("c0")))
    assert _count(cache, "n0") == 2
    assert cache.volume_index.rows_of[(EBS, "h0")] == {0: 2}
    cache.remove_pod("uid-default-a")
    assert _count(cache, "n0") == 1 and (EBS, "h1") not in cache.volume_index.rows_of
    cache.add_pod(_bound("c", "n0", claim_volume("late")))
    assert cache.volume_index.volumes_on(0)[(EBS, UnboundClaim("default/late"))] == 1


def test_claim_and_volume_changes_recount_exactly_their_pods() -> None:
    cache = _cache()
    cache.add_pod(_bound("a", "n0", claim_volume("late")))
    assert cache.volume_index.volumes_on(0) == {(EBS, UnboundClaim("default/late")): 1}
    store_objects(cache, [make_pvc("late", volume_name="pv1")])  # bound now
    assert cache.volume_index.volumes_on(0) == {(EBS, "h1"): 1}
    store_objects(cache, [make_pv("pv1", csi=(EBS, "h9"))])
    assert cache.volume_index.volumes_on(0) == {(EBS, "h9"): 1}
    cache.volumes.delete("persistentvolumes", "pv1")  # falls back to the class
    assert cache.volume_index.volumes_on(0) == {}  # the claim names no class
    assert _count(cache, "n0") == 0


def test_attachments_count_once_with_the_pods() -> None:
    cache = _cache()
    store_objects(cache, [make_volume_attachment("va0", node="n0", attacher=EBS, pv="pv0")])
    assert _count(cache, "n0") == 1
    cache.add_pod(_bound("a", "n0", claim_volume("c0")))
    assert _count(cache, "n0") == 1  # the same volume: once
    store_objects(cache, [make_volume_attachment("va1", node="n0", attacher=EBS, pv="pv1")])
    assert _count(cache, "n0") == 2
    cache.volumes.delete("volumeattachments", "va0")
    assert _count(cache, "n0") == 2  # still the pod's
    cache.remove_pod("uid-default-a")
    assert _count(cache, "n0") == 1


def test_csinode_changes_move_migrated_volumes() -> None:
    cache = cluster_of([make_node("n0")])
    store_objects(
        cache, [make_pv("aws", awsElasticBlockStore={"volumeID": "vol-1"}), make_pvc("c", volume_name="aws")]
    )
    cache.add_pod(
        _bound("a", "n0", claim_volume("c"), inline_volume("awsElasticBlockStore", volumeID="vol-2"))
    )
    assert _count(cache, "n0") == 0  # no CSINode: no migration
    store_objects(cache, [make_csi_node("n0", {EBS: 1})])
    assert _count(cache, "n0") == 2
    assert int(cache.volume_index.limits[cache.volume_index.column(EBS), 0]) == 1
    cache.volumes.delete("csinodes", "n0")
    assert _count(cache, "n0") == 0


def test_node_removal_and_return() -> None:
    cache = _cache()
    cache.add_pod(_bound("a", "n0", claim_volume("c0")))
    store_objects(cache, [make_volume_attachment("va1", node="n0", attacher=EBS, pv="pv1")])
    cache.remove_node("n0")
    assert cache.volume_index.state()["refs"] == {} and cache.volume_index.state()["va_refs"] == {}
    cache.add_node(node("n0"))
    assert _count(cache, "n0") == 2


def test_overlay_moves_of_claim_references() -> None:
    cache = _cache()
    holder = _bound("a", "n0", claim_volume("c0"))
    cache.add_pod(holder)
    index = cache.volume_index
    assert index.claim_used("default/c0")
    with cache.what_if(remove=[holder.uid]):
        assert index.claim_refs["default/c0"] == 0
        assert index.claim_used("default/c0")  # as before the overlay
        assert index.overlay_claim_names["c0"] == -1
    assert not index.overlay_claim_names and index.claim_used("default/c0")


def test_disks_per_row() -> None:
    cache = _cache()
    gce = inline_volume("gcePersistentDisk", pdName="d", readOnly=True)
    cache.add_pod(_bound("a", "n1", gce))
    disks = cache.volume_index.disks
    probe = pod_from_dict(make_pod("p", volumes=[inline_volume("gcePersistentDisk", pdName="d")]))
    assert disks.conflicting_rows(probe.volumes[0].in_tree) == [1]  # type: ignore[arg-type]
    read_only = pod_from_dict(make_pod("p", volumes=[gce]))
    assert disks.conflicting_rows(read_only.volumes[0].in_tree) == []  # type: ignore[arg-type]
    cache.remove_node("n1")
    assert not disks
