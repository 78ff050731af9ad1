"""Storage records: what the decoders keep, and errors that name the object and the field."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from ksched.errors import ObjectError
from ksched.explain import load_cluster
from ksched.model.storage import (
    TopologyTerm,
    csi_node_from_dict,
    csi_storage_capacity_from_dict,
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)


def _pv(**spec: object) -> dict[str, object]:
    return {"metadata": {"name": "pv1", "resourceVersion": "7"}, "spec": spec}


def test_pv_fields() -> None:
    pv = pv_from_dict(
        _pv(
            capacity={"storage": "1.5Gi"},
            accessModes=["ReadWriteOnce"],
            storageClassName="fast",
            claimRef={"namespace": "ns", "name": "c", "uid": "u1"},
            csi={"driver": "d.example.com", "volumeHandle": "h1"},
            nodeAffinity={
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}
                    ]
                }
            },
        )
    )
    assert pv.capacity == Fraction(3 * 2**29)
    assert pv.resource_version == 7 and pv.storage_class == "fast" and pv.volume_mode == "Filesystem"
    assert pv.claim_ref is not None and pv.claim_ref.key == "ns/c"
    assert pv.csi is not None and pv.csi.volume_handle == "h1"
    assert pv.node_affinity is not None and pv.node_affinity[0].match_expressions[0].values == ("a",)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"capacity": {"storage": "abc"}}, "spec.capacity.storage"),
        ({"capacity": {"storage": "-1Gi"}}, "spec.capacity.storage"),
        ({"accessModes": ["ReadWriteSometimes"]}, "spec.accessModes[0]"),
        ({"volumeMode": "Tape"}, "spec.volumeMode"),
        (
            {"nodeAffinity": {"required": {"nodeSelectorTerms": "x"}}},
            "spec.nodeAffinity.required.nodeSelectorTerms",
        ),
    ],
)
def test_pv_errors_name_the_field(spec: dict[str, object], field: str) -> None:
    with pytest.raises(ObjectError) as err:
        pv_from_dict(_pv(**spec))
    assert err.value.obj == "PersistentVolume pv1" and err.value.field == field


def test_pvc_class_annotation_wins_and_owner() -> None:
    pvc = pvc_from_dict(
        {
            "metadata": {
                "name": "web-data",
                "namespace": "ns",
                "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "p1", "controller": True}
                ],
            },
            "spec": {"storageClassName": "ga", "resources": {"requests": {"storage": "1Gi"}}},
        }
    )
    assert pvc.storage_class == "beta" and pvc.controller_uid == "p1" and pvc.request == 2**30
    assert not pvc.fully_bound and pvc.selected_node is None


def test_class_topology_and_csinode_limits() -> None:
    sc = storage_class_from_dict(
        {
            "metadata": {"name": "wffc"},
            "provisioner": "d.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}],
        }
    )
    assert sc.allowed_topologies == (TopologyTerm((("zone", frozenset({"a", "b"})),)),)
    node = csi_node_from_dict(
        {
            "metadata": {
                "name": "n1",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"},
            },
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 39}}]},
        }
    )
    assert node.limits() == {"ebs.csi.aws.com": 39} and node.migrated("kubernetes.io/aws-ebs")
    with pytest.raises(ObjectError, match=r"spec\.drivers\[0\]\.allocatable\.count"):
        csi_node_from_dict(
            {"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "d", "allocatable": {"count": -1}}]}}
        )


def test_capacity_prefers_maximum_volume_size() -> None:
    cap = csi_storage_capacity_from_dict(
        {
            "metadata": {"name": "c", "namespace": "kube-system"},
            "storageClassName": "sc",
            "capacity": "10Gi",
            "maximumVolumeSize": "1Gi",
        }
    )
    assert cap.sufficient(2**30) and not cap.sufficient(2**30 + 1)


def test_explain_loads_storage_objects(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        """
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], storageClassName: fast}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: c1, namespace: default}
spec: {storageClassName: fast, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
"""
    )
    volumes = load_cluster(path).cache.volumes
    assert volumes.pv("pv1") is not None and volumes.pvc("default", "c1") is not None
    assert [pv.name for pv in volumes.pvs_of_class("fast")] == ["pv1"]
    assert volumes.classes["fast"].binding_mode == "WaitForFirstConsumer"
