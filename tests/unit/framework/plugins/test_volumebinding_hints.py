"""VolumeBinding's queueing hints as tables: upstream volume_binding_test.go's TestIsSchedulableAfter*
cases where the stored tables match v1.35's hint functions (the PVC, StorageClass and
CSIStorageCapacity tables, less the cases that exercised an older PVC-lister variant or Go type
errors), and the CSINode (PR 125097) and CSIDriver (PR 125171) cases written from the functions."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.api import QueueingHint
from ksched.framework.plugins.volumebinding import hints
from ksched.model.pod import Pod, pod_from_dict
from ksched.model.storage import (
    csi_driver_from_dict,
    csi_node_from_dict,
    csi_storage_capacity_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)
from tests.builders import make_pod
from tests.storage_builders import (
    claim_volume,
    ephemeral_volume,
    make_capacity,
    make_csi_driver,
    make_csi_node,
    make_pvc,
    make_storage_class,
)

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def hint_pod(
    *claims: str, ephemeral: str | None = None, empty_dir: bool = False, csi: str | None = None
) -> Pod:
    volumes: list[dict[str, Any]] = [claim_volume(c) for c in claims]
    if ephemeral:
        volumes.append(ephemeral_volume(ephemeral))
    if empty_dir:
        volumes.append({"name": "scratch", "emptyDir": {}})
    if csi:
        volumes.append({"name": "inline", "csi": {"driver": csi}})
    return pod_from_dict(make_pod("pod-a", volumes=volumes))


def claim(name: str, cls: str = "sc-a", **kw: Any) -> Any:
    return pvc_from_dict(make_pvc(name, storage_class=cls, **kw))


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(hint_pod(), claim("pvc-b"), claim("pvc-b"), SKIP, id="pod has no pvcs"),
        pytest.param(
            hint_pod(empty_dir=True),
            claim("pvc-b"),
            claim("pvc-b"),
            SKIP,
            id="pod has no pvc or ephemeral volumes",
        ),
        pytest.param(
            hint_pod("pvc-a", "pvc-b"), None, claim("pvc-b", "sc-b"), Q, id="pod has a newly added pvc"
        ),
        pytest.param(
            hint_pod("pvc-a", "pvc-b"),
            claim("pvc-a", "sc-b", phase="Pending"),
            claim("pvc-a", "sc-b", phase="Bound"),
            Q,
            id="pod has pvcs with changed status.phase",
        ),
        pytest.param(
            hint_pod(ephemeral="ephemeral-a"),
            claim("pod-a-ephemeral-a", phase="Pending"),
            claim("pod-a-ephemeral-a", phase="Bound"),
            Q,
            id="pod has ephemeral volume with changed status.phase",
        ),
        pytest.param(
            hint_pod("pvc-a", "pvc-b"),
            claim("pvc-b", annotations={"x": "1"}),
            claim("pvc-b", annotations={"x": "2"}),
            Q,
            id="pod has pvcs with changed annotations",
        ),
        pytest.param(
            hint_pod("pvc-a", "pvc-b"),
            claim("pvc-b", access_modes=["ReadWriteOnce"]),
            claim("pvc-b", access_modes=["ReadWriteOncePod"]),
            Q,
            id="pod has pvcs with changed spec",
        ),
        pytest.param(
            hint_pod("pvc-a"),
            None,
            claim("pvc-a", namespace="other"),
            SKIP,
            id="claim of another namespace",
        ),
        pytest.param(hint_pod("pvc-a"), None, claim("pvc-z"), SKIP, id="claim the pod does not use"),
    ],
)
def test_after_persistent_volume_claim_change(pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.after_persistent_volume_claim_change(pod, old, new) == want


def sc(name: str, hosts: list[str] | None = None) -> Any:
    topo = {"kubernetes.io/hostname": hosts} if hosts is not None else None
    return storage_class_from_dict(make_storage_class(name, allowed_topologies=topo))


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(sc("sc-a"), sc("sc-a"), SKIP, id="pod has no pvcs"),
        pytest.param(sc("sc-b"), sc("sc-b"), SKIP, id="pod has pvc volumes with unchanged storage class"),
        pytest.param(None, sc("sc-b"), Q, id="pod has pvc that references a newly added storage class"),
        pytest.param(
            sc("sc-b", ["node1", "node2"]),
            sc("sc-b", ["node1", "node3"]),
            Q,
            id="pod has pvc volumes with changed storage class: AllowedTopologies",
        ),
        pytest.param(
            sc("sc-a", ["node1", "node2"]),
            sc("sc-a", ["node1", "node3"]),
            Q,
            id="pod has ephemeral volume with unchanged storage class: AllowedTopologies",
        ),
    ],
)
def test_after_storage_class_change(old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.after_storage_class_change(hint_pod("pvc-a", "pvc-b"), old, new) == want


def cap(capacity: str | None = None, max_size: str | None = None, cls: str = "sc-a") -> Any:
    return csi_storage_capacity_from_dict(
        make_capacity("cap-a", cls, everywhere=True, capacity=capacity, maximum_volume_size=max_size)
    )


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(cap(), cap(), SKIP, id="pod has pvcs with no CSIStorageCapacity changes"),
        pytest.param(
            None, cap(cls="sc-b"), Q, id="pod has pvc that references a newly added CSIStorageCapacity"
        ),
        pytest.param(
            cap("1Gi"), cap("2Gi"), Q, id="pod has ephemeral volume with changed CSIStorageCapacity.Capacity"
        ),
        pytest.param(
            cap(max_size="1Gi"),
            cap(max_size="2Gi"),
            Q,
            id="pod has pvcs with changed CSIStorageCapacity.MaximumVolumeSize",
        ),
        pytest.param(cap("2Gi"), cap("1Gi"), SKIP, id="capacity decreased"),
        pytest.param(
            cap("5Gi", "1Gi"), cap("9Gi", "1Gi"), SKIP, id="maximumVolumeSize is the limit when set"
        ),
        pytest.param(cap(), cap("1Gi"), Q, id="a limit appears"),
        pytest.param(cap("1Gi"), cap(), SKIP, id="the limit goes away"),
    ],
)
def test_after_csi_storage_capacity_change(old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.after_csi_storage_capacity_change(hint_pod("pvc-a", "pvc-b"), old, new) == want


def driver(capacity: bool | None) -> Any:
    return csi_driver_from_dict(make_csi_driver("csi.example.com", storage_capacity=capacity))


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            hint_pod("pvc-a"), driver(True), driver(False), SKIP, id="pod has no inline volume of the driver"
        ),
        pytest.param(
            hint_pod(csi="csi.example.com"), driver(True), driver(False), Q, id="storage capacity disabled"
        ),
        pytest.param(
            hint_pod(csi="csi.example.com"), driver(True), driver(None), Q, id="storage capacity unset"
        ),
        pytest.param(
            hint_pod(csi="csi.example.com"), driver(False), driver(True), SKIP, id="storage capacity enabled"
        ),
        pytest.param(
            hint_pod(csi="other.example.com"), driver(True), driver(False), SKIP, id="another driver"
        ),
    ],
)
def test_after_csi_driver_change(pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.after_csi_driver_change(pod, old, new) == want


def csi_node(migrated: str | None) -> Any:
    return csi_node_from_dict(make_csi_node("csinode-a", migrated=migrated))


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, csi_node(None), Q, id="CSINode creation"),
        pytest.param(
            csi_node(None), csi_node("test1"), Q, id="CSINode's migrated-plugins annotation is added"
        ),
        pytest.param(
            csi_node("test1"),
            csi_node("test1,test2"),
            Q,
            id="CSINode's migrated-plugins annotation is updated",
        ),
        pytest.param(
            csi_node("test1"), csi_node(None), Q, id="CSINode's migrated-plugins annotation is removed"
        ),
        pytest.param(
            csi_node("test1"),
            csi_node("test1"),
            SKIP,
            id="CSINode's migrated-plugins annotation is unchanged",
        ),
    ],
)
def test_after_csi_node_change(old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.after_csi_node_change(hint_pod("pvc-a"), old, new) == want
