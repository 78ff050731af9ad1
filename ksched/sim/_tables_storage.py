"""``kubectl get`` printers for the storage kinds, with the columns kube-apiserver v1.35 prints.

Each entry is (column specs, row printer); :mod:`ksched.sim._tables` turns the specs into a Table's
column definitions. Rows are printed from the stored object, so a field that is absent prints as the
upstream printer prints its nil value (``<unset>``, ``Delete``, ``Immediate``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ksched.sim._clock import age
from ksched.sim._storage_names import ACCESS_MODES, is_default_class, storage_class_of

Obj = dict[str, Any]
Cell = Any
ColumnSpec = tuple[str, str, int]
"""(name, type, priority): priority 1 columns show only with ``-o wide``."""


_ABBREV = dict(zip(ACCESS_MODES, ("RWO", "ROX", "RWX", "RWOP"), strict=True))


def _age(o: Obj, now: float) -> str:
    return age(o["metadata"].get("creationTimestamp"), now)


def _access_modes(modes: Any) -> str:
    """Upstream's ``GetAccessModesAsString``: abbreviations in a fixed order, each once."""
    have = set(modes) if isinstance(modes, list) else set()
    return ",".join(_ABBREV[mode] for mode in ACCESS_MODES if mode in have)


def _storage(resources: Any) -> str:
    return str((resources or {}).get("storage", "")) if isinstance(resources, dict) else ""


def _pv_row(o: Obj, now: float) -> list[Cell]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
    phase = "Terminating" if o["metadata"].get("deletionTimestamp") else st.get("phase", "")
    return [
        o["metadata"]["name"],
        _storage(spec.get("capacity")),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy", ""),
        phase,
        claim,
        storage_class_of(o),
        spec.get("volumeAttributesClassName") or "<unset>",
        st.get("reason", ""),
        _age(o, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _pvc_row(o: Obj, now: float) -> list[Cell]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    phase = "Terminating" if o["metadata"].get("deletionTimestamp") else st.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        capacity, modes = _storage(st.get("capacity")), _access_modes(st.get("accessModes"))
    return [
        o["metadata"]["name"],
        phase,
        spec.get("volumeName", ""),
        capacity,
        modes,
        storage_class_of(o),
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(o, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _sc_row(o: Obj, now: float) -> list[Cell]:
    name = o["metadata"]["name"]
    if is_default_class(o):
        name += " (default)"
    return [
        name,
        o.get("provisioner", ""),
        o.get("reclaimPolicy") or "Delete",
        o.get("volumeBindingMode") or "Immediate",
        bool(o.get("allowVolumeExpansion")),
        _age(o, now),
    ]


def _csinode_row(o: Obj, now: float) -> list[Cell]:
    drivers = (o.get("spec") or {}).get("drivers") or []
    return [o["metadata"]["name"], len(drivers) if isinstance(drivers, list) else 0, _age(o, now)]


def _csidriver_row(o: Obj, now: float) -> list[Cell]:
    spec = o.get("spec") or {}
    tokens = spec.get("tokenRequests")
    audiences = (
        ",".join(str(t.get("audience", "")) for t in tokens) if isinstance(tokens, list) else "<unset>"
    )
    modes = spec.get("volumeLifecycleModes") or []
    return [
        o["metadata"]["name"],
        spec.get("attachRequired", True) is not False,
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        audiences,
        bool(spec.get("requiresRepublish")),
        ",".join(str(m) for m in modes) or "<none>",
        _age(o, now),
    ]


def _capacity_row(o: Obj, now: float) -> list[Cell]:
    capacity = o.get("capacity")
    return [
        o["metadata"]["name"],
        o.get("storageClassName", ""),
        str(capacity) if capacity is not None else "<unset>",
        _age(o, now),
    ]


def _attachment_row(o: Obj, now: float) -> list[Cell]:
    spec = o.get("spec") or {}
    return [
        o["metadata"]["name"],
        spec.get("attacher", ""),
        (spec.get("source") or {}).get("persistentVolumeName", ""),
        spec.get("nodeName", ""),
        bool((o.get("status") or {}).get("attached")),
        _age(o, now),
    ]


def _vac_row(o: Obj, now: float) -> list[Cell]:
    return [o["metadata"]["name"], o.get("driverName", ""), _age(o, now)]


STORAGE_TABLES: dict[str, tuple[tuple[ColumnSpec, ...], Callable[[Obj, float], list[Cell]]]] = {
    "persistentvolumes": (
        (
            ("Name", "string", 0),
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("Reclaim Policy", "string", 0),
            ("Status", "string", 0),
            ("Claim", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            ("Reason", "string", 0),
            ("Age", "string", 0),
            ("VolumeMode", "string", 1),
        ),
        _pv_row,
    ),
    "persistentvolumeclaims": (
        (
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Volume", "string", 0),
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            ("Age", "string", 0),
            ("VolumeMode", "string", 1),
        ),
        _pvc_row,
    ),
    "storageclasses.storage.k8s.io": (
        (
            ("Name", "string", 0),
            ("Provisioner", "string", 0),
            ("ReclaimPolicy", "string", 0),
            ("VolumeBindingMode", "string", 0),
            ("AllowVolumeExpansion", "boolean", 0),
            ("Age", "string", 0),
        ),
        _sc_row,
    ),
    "csinodes.storage.k8s.io": (
        (("Name", "string", 0), ("Drivers", "integer", 0), ("Age", "string", 0)),
        _csinode_row,
    ),
    "csidrivers.storage.k8s.io": (
        (
            ("Name", "string", 0),
            ("AttachRequired", "boolean", 0),
            ("PodInfoOnMount", "boolean", 0),
            ("StorageCapacity", "boolean", 0),
            ("TokenRequests", "string", 0),
            ("RequiresRepublish", "boolean", 0),
            ("Modes", "string", 0),
            ("Age", "string", 0),
        ),
        _csidriver_row,
    ),
    "csistoragecapacities.storage.k8s.io": (
        (
            ("Name", "string", 0),
            ("StorageClassName", "string", 0),
            ("Capacity", "string", 0),
            ("Age", "string", 0),
        ),
        _capacity_row,
    ),
    "volumeattachments.storage.k8s.io": (
        (
            ("Name", "string", 0),
            ("Attacher", "string", 0),
            ("PV", "string", 0),
            ("Node", "string", 0),
            ("Attached", "boolean", 0),
            ("Age", "string", 0),
        ),
        _attachment_row,
    ),
    "volumeattributesclasses.storage.k8s.io": (
        (("Name", "string", 0), ("DriverName", "string", 0), ("Age", "string", 0)),
        _vac_row,
    ),
}
