"""Names the storage API and its controllers agree on: annotations, phases, and two small readers.

Shared by the server side (defaulting, admission, printers) and the controller stand-ins in
:mod:`ksched.sim.storage_controllers`, which talk to the server over HTTP only; the strings are
upstream's (``k8s.io/component-helpers/storage/volume``, ``k8s.io/api/storage/v1``).
"""

from __future__ import annotations

from typing import Any, Final

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY: Final = "pv.kubernetes.io/provisioned-by"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATIONS: Final = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
"""A class with this provisioner is for statically created volumes only."""

ACCESS_MODES: Final = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
"""In the order ``kubectl get`` prints their abbreviations."""
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"

Obj = dict[str, Any]


def annotations(obj: Obj) -> dict[str, Any]:
    """``metadata.annotations`` (empty when absent or not an object)."""
    ann = (obj.get("metadata") or {}).get("annotations")
    return ann if isinstance(ann, dict) else {}


def storage_class_of(obj: Obj) -> str:
    """The class a PV or PVC asks for: the beta annotation wins over ``spec.storageClassName``."""
    ann = annotations(obj)
    if ANN_BETA_STORAGE_CLASS in ann:
        return str(ann[ANN_BETA_STORAGE_CLASS])
    spec = obj.get("spec")
    return str((spec.get("storageClassName") if isinstance(spec, dict) else None) or "")


def is_default_class(sc: Obj) -> bool:
    """Upstream's ``IsDefaultAnnotation``: either default-class annotation is ``"true"``."""
    ann = annotations(sc)
    return any(ann.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)


def default_class(classes: list[Obj]) -> Obj | None:
    """Upstream's ``GetDefaultClass``: of the default classes, the newest, then the first by name."""
    defaults = [sc for sc in classes if is_default_class(sc)]
    if not defaults:
        return None
    defaults.sort(key=lambda sc: sc["metadata"]["name"])
    defaults.sort(key=lambda sc: str(sc["metadata"].get("creationTimestamp") or ""), reverse=True)
    return defaults[0]
