"""``ValidatePodUpdate``'s spec rules: a pod's spec is immutable but for upstream's short list.

Mutable on a main update: container and init-container images, ``activeDeadlineSeconds`` (set, or
lowered), tolerations (additions, and an existing one's ``tolerationSeconds``),
``terminationGracePeriodSeconds`` from a negative value to 1, and scheduling gates (removal only;
while gated, nodeSelector and node affinity may be added to). Anything else, resources included
(v1.35 resizes through the ``resize`` subresource), is refused with upstream's message followed by
a summary of the changed spec fields (upstream prints a Go struct diff there).
"""

from __future__ import annotations

from typing import Any

from ksched.sim._storage_validation import Errors

Obj = dict[str, Any]

INT32_MAX = 2**31 - 1
UPDATABLE_FIELDS = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def validate_spec_update(errs: Errors, spec: Obj, old: Obj) -> None:
    """The update rules of ``ValidatePodUpdate`` for ``spec`` replacing ``old``."""
    containers, old_containers = spec.get("containers") or [], old.get("containers") or []
    if len(containers) != len(old_containers):
        errs.forbidden("spec.containers", "pod updates may not add or remove containers")
        return
    init, old_init = spec.get("initContainers") or [], old.get("initContainers") or []
    if len(init) != len(old_init):
        errs.forbidden("spec.initContainers", "pod updates may not add or remove containers")
        return
    if not _check_deadline(errs, spec.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")):
        return
    munged = dict(spec)
    munged["containers"] = [_with_image(c, o) for c, o in zip(containers, old_containers, strict=True)]
    munged["initContainers"] = [_with_image(c, o) for c, o in zip(init, old_init, strict=True)]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        _carry(munged, old, key)
    grace, old_grace = spec.get("terminationGracePeriodSeconds"), old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        _carry(munged, old, "terminationGracePeriodSeconds")
    if old.get("schedulingGates"):
        _munge_gated(munged, old)
    if spec.get("tolerations") != old.get("tolerations"):
        _check_tolerations(errs, spec.get("tolerations") or [], old.get("tolerations") or [])
    _check_gates(errs, spec.get("schedulingGates") or [], old.get("schedulingGates") or [])
    if _cmp(munged) != _cmp(old):
        errs.forbidden("spec", f"{UPDATABLE_FIELDS}\n{_summary(munged, old)}")


def _with_image(ctr: Any, old: Any) -> Any:
    if isinstance(ctr, dict) and isinstance(old, dict):
        return {**ctr, "image": old.get("image")}
    return ctr


def _carry(munged: Obj, old: Obj, key: str) -> None:
    if key in old:
        munged[key] = old[key]
    else:
        munged.pop(key, None)


def _cmp(spec: Obj) -> Obj:
    """A spec with empty values dropped (Go's zero value and absent compare equal)."""
    return {k: v for k, v in spec.items() if v not in (None, [], {}, "")}


def _summary(new: Obj, old: Obj) -> str:
    a, b = _cmp(new), _cmp(old)
    changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return "changed: " + ", ".join(f"spec.{k}" for k in changed)


def _check_deadline(errs: Errors, new: Any, old: Any) -> bool:
    """activeDeadlineSeconds may be set or lowered, never raised or unset; False stops the checks."""
    field = "spec.activeDeadlineSeconds"
    if isinstance(new, int):
        if not 0 <= new <= INT32_MAX:
            errs.invalid(field, new, f"must be between 0 and {INT32_MAX}, inclusive")
            return False
        if isinstance(old, int) and old < new:
            errs.invalid(field, new, "must be less than or equal to previous value")
            return False
    elif old is not None:
        errs.invalid(field, None, "must not update from a positive integer to nil value")
    return True


def _munge_gated(munged: Obj, old: Obj) -> None:
    """A gated pod may gain nodeSelector entries and node affinity; checked as additions only."""
    new_sel, old_sel = munged.get("nodeSelector") or {}, old.get("nodeSelector") or {}
    if all(new_sel.get(k) == v for k, v in old_sel.items()):
        _carry(munged, old, "nodeSelector")
    if munged.get("affinity") != old.get("affinity") and not old.get("affinity"):
        _carry(munged, old, "affinity")


def _check_tolerations(errs: Errors, new: list[Any], old: list[Any]) -> None:
    """``validateOnlyAddedTolerations``: each old toleration is still there, bar tolerationSeconds."""
    for before in old:
        found = False
        for after in new:
            if isinstance(before, dict) and isinstance(after, dict):
                clone = {**before, "tolerationSeconds": after.get("tolerationSeconds")}
                if _cmp(clone) == _cmp(after):
                    found = True
                    break
        if not found:
            errs.forbidden(
                "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
            )
            return


def _check_gates(errs: Errors, new: list[Any], old: list[Any]) -> None:
    """``validateOnlyDeletedSchedulingGates``: no gate may be added once the pod exists."""
    old_names = {g.get("name") for g in old if isinstance(g, dict)}
    for i, gate in enumerate(new):
        name = gate.get("name") if isinstance(gate, dict) else None
        if name not in old_names:
            errs.forbidden(
                f"spec.schedulingGates[{i}].name",
                f"only deletion is allowed, but found new scheduling gate '{name}'",
            )
