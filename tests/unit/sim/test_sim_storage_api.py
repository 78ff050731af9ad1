"""The storage kinds on their way into the store: defaults, DefaultStorageClass admission, validation.

Expected messages are kube-apiserver v1.35's field errors (``pkg/apis/core/validation``,
``pkg/apis/storage/validation``); defaults are those of ``pkg/apis/{core,storage}/v1/defaults.go``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.sim._clock import FixedClock
from ksched.sim._status import StatusError
from ksched.sim.store import Store

DEFAULT_CLASS = {"storageclass.kubernetes.io/is-default-class": "true"}


def pv(name: str = "pv-1", **spec: Any) -> dict[str, Any]:
    base = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "csi": {"driver": "d.csi", "volumeHandle": "h"},
    }
    return {"metadata": {"name": name}, "spec": {**base, **spec}}


def pvc(name: str = "claim", **spec: Any) -> dict[str, Any]:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return {"metadata": {"name": name}, "spec": {**base, **spec}}


def sc(
    name: str, provisioner: str = "d.csi", annotations: dict[str, str] | None = None, **rest: Any
) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations or {}}, "provisioner": provisioner, **rest}


def test_persistent_volume_defaults() -> None:
    got = Store(clock=FixedClock()).create("persistentvolumes", pv(hostPath={"path": "/d"}, csi=None))
    assert got["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert got["spec"]["volumeMode"] == "Filesystem"
    assert got["spec"]["hostPath"] == {"path": "/d", "type": ""}
    assert got["status"] == {"phase": "Pending", "lastPhaseTransitionTime": "2023-11-14T22:13:20Z"}


def test_claim_storage_class_and_csi_driver_defaults() -> None:
    store = Store()
    claim = store.create("persistentvolumeclaims", pvc())
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    assert "storageClassName" not in claim["spec"]  # no default class: nothing to admit
    cls = store.create("storageclasses", sc("fast"))
    assert (cls["reclaimPolicy"], cls["volumeBindingMode"]) == ("Delete", "Immediate")
    driver = store.create("csidrivers", {"metadata": {"name": "d.csi"}})
    assert driver["spec"] == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "volumeLifecycleModes": ["Persistent"],
        "requiresRepublish": False,
        "seLinuxMount": False,
    }


def test_default_storage_class_admission_newest_default_wins() -> None:
    clock = FixedClock()
    store = Store(clock=clock)
    store.create("storageclasses", sc("a-older", annotations=DEFAULT_CLASS))
    clock.advance(5)
    store.create("storageclasses", sc("z-newer", annotations=DEFAULT_CLASS))
    store.create("storageclasses", sc("plain"))
    assert store.create("persistentvolumeclaims", pvc("c1"))["spec"]["storageClassName"] == "z-newer"
    explicit = store.create("persistentvolumeclaims", pvc("c2", storageClassName=""))
    assert explicit["spec"]["storageClassName"] == ""  # "" asks for no class: left alone
    beta = pvc("c3")
    beta["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "plain"}
    assert "storageClassName" not in store.create("persistentvolumeclaims", beta)["spec"]


def test_same_second_defaults_tie_break_by_name() -> None:
    store = Store(clock=FixedClock())
    store.create("storageclasses", sc("b", annotations=DEFAULT_CLASS))
    store.create(
        "storageclasses", sc("a", annotations={"storageclass.beta.kubernetes.io/is-default-class": "true"})
    )
    assert store.create("persistentvolumeclaims", pvc())["spec"]["storageClassName"] == "a"


def test_last_phase_transition_time_follows_phase_changes() -> None:
    clock = FixedClock()
    store = Store(clock=clock)
    store.create("persistentvolumes", pv())
    clock.advance(60)
    same = store.update("persistentvolumes", {**pv(), "status": {"phase": "Pending"}}, subresource="status")
    assert same["status"]["lastPhaseTransitionTime"] == "2023-11-14T22:13:20Z"
    moved = store.update(
        "persistentvolumes", {**pv(), "status": {"phase": "Available"}}, subresource="status"
    )
    assert moved["status"]["lastPhaseTransitionTime"] == "2023-11-14T22:14:20Z"


def _error(resource: str, obj: dict[str, Any], namespace: str = "default") -> StatusError:
    with pytest.raises(StatusError) as info:
        Store().create(resource, obj, namespace=namespace)
    return info.value


NAME_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@pytest.mark.parametrize(
    ("resource", "obj", "message"),
    [
        pytest.param(
            "persistentvolumeclaims",
            {"metadata": {"name": "c"}, "spec": {}},
            'PersistentVolumeClaim "c" is invalid: [spec.accessModes: Required value: at least 1 access mode '
            "is required, spec.resources[storage]: Required value]",
            id="claim without access modes and request",
        ),
        pytest.param(
            "persistentvolumeclaims",
            pvc(resources={"requests": {"storage": "0"}}),
            'PersistentVolumeClaim "claim" is invalid: spec.resources[storage]: Invalid value: "0": '
            "must be greater than zero",
            id="claim requesting nothing",
        ),
        pytest.param(
            "persistentvolumeclaims",
            pvc(accessModes=["ReadWriteOncePod", "ReadOnlyMany"]),
            'PersistentVolumeClaim "claim" is invalid: spec.accessModes: Forbidden: may not use '
            "ReadWriteOncePod with other access modes",
            id="ReadWriteOncePod with another mode",
        ),
        pytest.param(
            "persistentvolumeclaims",
            pvc("Claim_1"),
            'PersistentVolumeClaim "Claim_1" is invalid: metadata.name: Invalid value: "Claim_1": '
            + NAME_ERROR,
            id="name not a DNS-1123 subdomain",
        ),
        pytest.param(
            "persistentvolumes",
            pv(accessModes=["Sometimes"], capacity={}, csi=None),
            'PersistentVolume "pv-1" is invalid: [spec.accessModes: Unsupported value: "Sometimes": '
            'supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod", '
            "spec.capacity: Required value, spec.capacity: Unsupported value: {}: "
            'supported values: "storage", spec: Required value: must specify a volume type]',
            id="volume with unknown mode, no capacity, no source",
        ),
        pytest.param(
            "persistentvolumes",
            pv(persistentVolumeReclaimPolicy="Keep", volumeMode="Raw"),
            'PersistentVolume "pv-1" is invalid: [spec.persistentVolumeReclaimPolicy: Unsupported value: '
            '"Keep": supported values: "Delete", "Recycle", "Retain", spec.volumeMode: Unsupported value: '
            '"Raw": supported values: "Block", "Filesystem"]',
            id="volume with unknown reclaim policy and volume mode",
        ),
        pytest.param(
            "persistentvolumes",
            pv(local={"path": "/mnt/disk"}, csi=None),
            'PersistentVolume "pv-1" is invalid: spec.nodeAffinity: Required value: Local volume requires '
            "node affinity",
            id="local volume without node affinity",
        ),
        pytest.param(
            "persistentvolumes",
            pv(nodeAffinity={"required": {"nodeSelectorTerms": []}}),
            'PersistentVolume "pv-1" is invalid: spec.nodeAffinity.required.nodeSelectorTerms: Required '
            "value: must have at least one node selector term",
            id="node affinity without terms",
        ),
        pytest.param(
            "storageclasses",
            sc("fast", provisioner="", reclaimPolicy="Recycle", volumeBindingMode="Later"),
            'StorageClass.storage.k8s.io "fast" is invalid: [provisioner: Required value, reclaimPolicy: '
            'Unsupported value: "Recycle": supported values: "Delete", "Retain", volumeBindingMode: '
            'Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"]',
            id="class without provisioner, bad policy and mode",
        ),
        pytest.param(
            "csinodes",
            {
                "metadata": {"name": "n1"},
                "spec": {"drivers": [{"name": "d.csi", "nodeID": "n1", "allocatable": {"count": -1}}]},
            },
            'CSINode.storage.k8s.io "n1" is invalid: spec.drivers[0].allocatable.count: Invalid value: -1: '
            "must be greater than or equal to 0",
            id="negative allocatable count",
        ),
        pytest.param(
            "csinodes",
            {
                "metadata": {"name": "n1"},
                "spec": {"drivers": [{"name": "d.csi", "nodeID": "n1"}, {"name": "d.csi"}]},
            },
            'CSINode.storage.k8s.io "n1" is invalid: [spec.drivers[1].name: Duplicate value: "d.csi", '
            "spec.drivers[1].nodeID: Required value]",
            id="duplicate driver without node id",
        ),
        pytest.param(
            "csistoragecapacities",
            {"metadata": {"name": "cap"}, "storageClassName": "fast", "capacity": "-1Gi"},
            'CSIStorageCapacity.storage.k8s.io "cap" is invalid: capacity: Invalid value: "-1Gi": must be '
            "greater than or equal to 0",
            id="negative capacity",
        ),
        pytest.param(
            "volumeattachments",
            {"metadata": {"name": "va"}, "spec": {"attacher": "d.csi", "source": {}}},
            'VolumeAttachment.storage.k8s.io "va" is invalid: [spec.nodeName: Required value, spec.source: '
            "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName]",
            id="attachment without node and source",
        ),
    ],
)
def test_invalid_objects_are_422_with_upstream_messages(
    resource: str, obj: dict[str, Any], message: str
) -> None:
    err = _error(resource, obj)
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == message
    causes = err.status()["details"]["causes"]
    assert all(c["message"] in err.message and c["field"] for c in causes)


@pytest.mark.parametrize(
    ("resource", "obj", "kind"),
    [
        pytest.param(
            "persistentvolumeclaims",
            pvc(resources={"requests": {"storage": "lots"}}),
            "PersistentVolumeClaim",
            id="claim request",
        ),
        pytest.param(
            "persistentvolumes", pv(capacity={"storage": "1 Gi"}), "PersistentVolume", id="volume capacity"
        ),
        pytest.param(
            "csistoragecapacities",
            {"metadata": {"name": "c"}, "storageClassName": "s", "maximumVolumeSize": "big"},
            "CSIStorageCapacity",
            id="maximum volume size",
        ),
    ],
)
def test_unparsable_quantities_are_400_as_the_decoder_answers(
    resource: str, obj: dict[str, Any], kind: str
) -> None:
    err = _error(resource, obj)
    assert (err.code, err.reason) == (400, "BadRequest")
    assert err.message == (
        f'{kind} in version "v1" cannot be handled as a {kind}: quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_malformed_shapes_are_400_not_500() -> None:
    for obj in (pvc(accessModes="ReadWriteOnce"), {"metadata": {"name": "c"}, "spec": "x"}):
        assert _error("persistentvolumeclaims", obj).code == 400
    assert _error("csinodes", {"metadata": {"name": "n"}, "spec": {"drivers": {"d": 1}}}).code == 400


def test_immutable_fields_on_update() -> None:
    store = Store()
    store.create("storageclasses", sc("fast", parameters={"type": "ssd"}))
    with pytest.raises(StatusError) as info:
        store.update("storageclasses", sc("fast", provisioner="other.csi", parameters={"type": "hdd"}))
    assert info.value.message == (
        'StorageClass.storage.k8s.io "fast" is invalid: [parameters: Forbidden: updates to parameters are '
        "forbidden., provisioner: Forbidden: updates to provisioner are forbidden.]"
    )
    store.update(
        "storageclasses", sc("fast", parameters={"type": "ssd"}, annotations={"a": "b"})
    )  # defaults fill in
    store.create("persistentvolumeclaims", pvc(), namespace="default")

    def grow(c: dict[str, Any]) -> dict[str, Any]:
        return {**c, "spec": {**c["spec"], "resources": {"requests": {"storage": "2Gi"}}}}

    with pytest.raises(StatusError) as info:
        store.mutate("persistentvolumeclaims", "claim", "default", grow)
    assert "spec: Forbidden: spec is immutable after creation except resources.requests" in info.value.message
    bound = store.mutate(
        "persistentvolumeclaims",
        "claim",
        "default",
        lambda c: {**c, "spec": {**c["spec"], "volumeName": "pv-1"}, "status": {"phase": "Bound"}},
    )
    assert bound["spec"]["volumeName"] == "pv-1"  # volumeName may be set once
    assert store.mutate("persistentvolumeclaims", "claim", "default", grow)["spec"]["resources"][
        "requests"
    ] == {"storage": "2Gi"}
