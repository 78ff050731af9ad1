"""What kube-apiserver v1.35 does to a storage object on its way into the store.

On create, in this order: defaulting (``pkg/apis/core/v1/defaults.go``, ``pkg/apis/storage/v1/defaults.go``),
the DefaultStorageClass admission plugin (``plugin/pkg/admission/storage/storageclass/setdefault``: a
claim created with no class at all gets the default class, the newest if several are marked), the
PV registry strategy (a new PV's ``status.lastPhaseTransitionTime``), then validation
(:mod:`ksched.sim._storage_validation`). On update: defaulting again (as upstream decodes every
write), the PV status strategy (``lastPhaseTransitionTime`` follows phase changes), validation with
the old object (immutable fields).

Defaults written here:

* PersistentVolume: ``spec.persistentVolumeReclaimPolicy: Retain``, ``spec.volumeMode: Filesystem``,
  ``status.phase: Pending``, ``spec.hostPath.type: ""``.
* PersistentVolumeClaim: ``spec.volumeMode: Filesystem``, ``status.phase: Pending``.
* StorageClass: ``reclaimPolicy: Delete``, ``volumeBindingMode: Immediate``.
* CSIDriver: ``attachRequired: true``, ``podInfoOnMount: false``, ``storageCapacity: false``,
  ``fsGroupPolicy: ReadWriteOnceWithFSType``, ``volumeLifecycleModes: [Persistent]``,
  ``requiresRepublish: false``, ``seLinuxMount: false``.

Deliberate difference: upstream's PV and PVC strategies reset ``status`` on create; here a status
given at create is kept (missing fields defaulted), as the embedded cluster does for pods, so a
test can seed bound claims and volumes without running the controllers. Every write builds new
dicts for the parts it defaults: stored objects are shared and never mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ksched.sim._resources import ResourceType
from ksched.sim._storage_group_validation import (
    validate_attachment,
    validate_attributes_class,
    validate_capacity,
    validate_csi_driver,
    validate_csi_node,
    validate_storage_class,
)
from ksched.sim._storage_names import ANN_BETA_STORAGE_CLASS, annotations, default_class
from ksched.sim._storage_validation import Obj, Validator, validate_pv, validate_pvc

PV = "persistentvolumes"
PVC = "persistentvolumeclaims"
STORAGE_CLASSES = "storageclasses.storage.k8s.io"

_CSI_DRIVER_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("attachRequired", True),
    ("podInfoOnMount", False),
    ("storageCapacity", False),
    ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
    ("volumeLifecycleModes", ["Persistent"]),
    ("requiresRepublish", False),
    ("seLinuxMount", False),
)


def _default(obj: Obj, part: str, values: Iterable[tuple[str, Any]]) -> None:
    """Set ``obj[part][key]`` where it is unset (absent or null), copying ``obj[part]`` first."""
    sub = obj.get(part)
    if sub is None:
        sub = {}
    if not isinstance(sub, dict):
        return  # malformed: validation answers 400
    missing = {k: v for k, v in values if sub.get(k) is None or (k == "volumeLifecycleModes" and not sub[k])}
    if missing:
        obj[part] = {**sub, **missing}


def _default_pv(pv: Obj) -> None:
    _default(pv, "spec", (("persistentVolumeReclaimPolicy", "Retain"), ("volumeMode", "Filesystem")))
    _default(pv, "status", (("phase", "Pending"),))
    spec = pv.get("spec")
    host_path = spec.get("hostPath") if isinstance(spec, dict) else None
    if isinstance(spec, dict) and isinstance(host_path, dict) and host_path.get("type") is None:
        pv["spec"] = {**spec, "hostPath": {**host_path, "type": ""}}


def _default_pvc(pvc: Obj) -> None:
    _default(pvc, "spec", (("volumeMode", "Filesystem"),))
    _default(pvc, "status", (("phase", "Pending"),))


def _default_storage_class(sc: Obj) -> None:
    for key, value in (("reclaimPolicy", "Delete"), ("volumeBindingMode", "Immediate")):
        if sc.get(key) is None:
            sc[key] = value


def _default_csi_driver(driver: Obj) -> None:
    _default(driver, "spec", _CSI_DRIVER_DEFAULTS)


_DEFAULTS: dict[str, Callable[[Obj], None]] = {
    PV: _default_pv,
    PVC: _default_pvc,
    STORAGE_CLASSES: _default_storage_class,
    "csidrivers.storage.k8s.io": _default_csi_driver,
}
VALIDATORS: dict[str, Validator] = {
    PV: validate_pv,
    PVC: validate_pvc,
    STORAGE_CLASSES: validate_storage_class,
    "csinodes.storage.k8s.io": validate_csi_node,
    "csidrivers.storage.k8s.io": validate_csi_driver,
    "csistoragecapacities.storage.k8s.io": validate_capacity,
    "volumeattachments.storage.k8s.io": validate_attachment,
    "volumeattributesclasses.storage.k8s.io": validate_attributes_class,
}
KINDS = frozenset(VALIDATORS)
"""Store keys of the resources this module admits; their validation (``VALIDATORS``) runs in
:mod:`ksched.sim._admission`, together with ObjectMeta's, so one 422 lists every error."""


def admit_create(rtype: ResourceType, obj: Obj, *, now: str, classes: Callable[[], Iterable[Obj]]) -> None:
    """Default and admit a new object in place (validation follows in :mod:`ksched.sim._admission`).

    ``now`` is the RFC 3339 creation time; ``classes`` lists the stored StorageClasses.
    """
    key = rtype.key
    if key in _DEFAULTS:
        _DEFAULTS[key](obj)
    if key == PVC:
        _admit_default_class(obj, classes)
    if key == PV and isinstance(obj.get("status"), dict) and not obj["status"].get("lastPhaseTransitionTime"):
        obj["status"] = {**obj["status"], "lastPhaseTransitionTime": now}


def admit_update(rtype: ResourceType, new: Obj, old: Obj, *, now: str) -> None:
    """Default ``new`` (replacing ``old``) in place; validation follows in :mod:`ksched.sim._admission`."""
    key = rtype.key
    if key in _DEFAULTS:
        _DEFAULTS[key](new)
    if key == PV:
        _phase_transition_time(new, old, now)


def _admit_default_class(pvc: Obj, classes: Callable[[], Iterable[Obj]]) -> None:
    """DefaultStorageClass: only a claim with no ``storageClassName`` at all (not ``""``) and no beta
    class annotation gets the default class."""
    spec = pvc.get("spec")
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return
    if ANN_BETA_STORAGE_CLASS in annotations(pvc):
        return
    default = default_class(list(classes()))
    if default is not None:
        pvc["spec"] = {**spec, "storageClassName": default["metadata"]["name"]}


def _phase_transition_time(new: Obj, old: Obj, now: str) -> None:
    """Upstream's PV status strategy: keep the old time while the phase stands, stamp ``now`` when the
    phase changes unless the writer set a new time itself."""
    status, old_status = new.get("status"), old.get("status")
    if not isinstance(status, dict) or not isinstance(old_status, dict):
        return
    old_time = old_status.get("lastPhaseTransitionTime")
    if status.get("phase") == old_status.get("phase"):
        if status.get("lastPhaseTransitionTime") is None and old_time is not None:
            new["status"] = {**status, "lastPhaseTransitionTime": old_time}
    elif status.get("lastPhaseTransitionTime") in (None, old_time):
        new["status"] = {**status, "lastPhaseTransitionTime": now}
