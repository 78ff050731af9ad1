"""Validation of the workload kinds: Deployment, ReplicaSet, StatefulSet, ReplicationController.

After ``pkg/apis/apps/validation`` and ``pkg/apis/core/validation`` (``ValidateReplicationController``):
replicas and the other counts non-negative, a selector that is required, valid, non-empty and
matches the template's labels, a template that restarts ``Always`` and sets no active deadline, the
status counts' bounds on a status write, and on update the fields upstream keeps immutable (the
selector of the apps kinds; every StatefulSet spec field but the few it lists).

The template's pod spec is checked by ``validate_pod_spec(errs, path, spec)`` of
:mod:`ksched.sim._validators_core` when that module offers it (looked up on first use, so this
module does not depend on its order of arrival); its labels and annotations are always checked
here. Fields that defaulting always fills (strategy types, ``podManagementPolicy``, a template's
``restartPolicy``) are checked only when set: after defaulting they always are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ksched.model.labels import qualified_name_errors
from ksched.sim import _other_common as oc
from ksched.sim._storage_validation import IMMUTABLE, Errors

Obj = dict[str, Any]
PodSpecValidator = Callable[[Errors, str, Obj], None]

_STS_MUTABLE = (
    "replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy", "minReadySeconds",
)  # fmt: skip
_STS_FORBIDDEN = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' "
    "and 'minReadySeconds' are forbidden"
)


@functools.cache
def _pod_spec_validator() -> PodSpecValidator | None:
    from ksched.sim import _validators_core

    found = getattr(_validators_core, "validate_pod_spec", None)
    return found if callable(found) else None


def check_template(errs: Errors, at: str, template: Obj | None, owner: str) -> None:
    """``ValidatePodTemplateSpec`` plus the controllers' rules (``owner`` names the kind in messages)."""
    if template is None:
        errs.required(at, "")
        return
    meta = template.get("metadata") or {}
    oc.check_labels(errs, f"{at}.labels", meta.get("labels"))
    for key in meta.get("annotations") or {}:
        for msg in qualified_name_errors(key.lower()):
            errs.invalid(f"{at}.annotations", key, msg)
    spec = template.get("spec") or {}
    validator = _pod_spec_validator()
    if validator is not None:
        validator(errs, f"{at}.spec", spec)
    if spec.get("restartPolicy") and spec["restartPolicy"] != "Always":
        errs.not_supported(f"{at}.spec.restartPolicy", spec["restartPolicy"], ["Always"])
    if spec.get("activeDeadlineSeconds") is not None:
        errs.forbidden(
            f"{at}.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {owner} is not Supported"
        )


def _check_label_selector(errs: Errors, spec: Obj, empty_kind: str) -> bool:
    """The apps kinds' selector rules; whether ``LabelSelectorAsSelector`` accepts it (``nil`` too)."""
    sel = spec.get("selector")
    if sel is None:
        errs.required("spec.selector", "")
        return True
    oc.check_selector(errs, "spec.selector", sel)
    if not (sel.get("matchLabels") or sel.get("matchExpressions")):
        oc.raw_invalid(
            errs, "spec.selector", oc.go_selector(sel), f"empty selector is invalid for {empty_kind}"
        )
    if not oc.selector_parses(sel):
        detail = "" if empty_kind == "statefulset" else "invalid label selector"
        oc.raw_invalid(errs, "spec.selector", oc.go_selector(sel), detail)
        return False
    return True


def _check_template_labels(errs: Errors, template: Obj, matches: Callable[[Obj], bool]) -> None:
    labels = (template.get("metadata") or {}).get("labels")
    if not matches(labels or {}):
        oc.raw_invalid(
            errs,
            "spec.template.metadata.labels",
            oc.go_map(labels),
            "`selector` does not match template `labels`",
        )


def _apps_spec(errs: Errors, spec: Obj, kind: str, empty_kind: str) -> None:
    """Replicas, selector and template; a missing selector selects nothing, an empty one everything."""
    oc.nonnegative(errs, "spec.replicas", spec.get("replicas"))
    oc.nonnegative(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    if not _check_label_selector(errs, spec, empty_kind):
        return
    sel, template = spec.get("selector"), spec.get("template") or {}
    if sel is None:
        _check_template_labels(errs, template, lambda labels: False)
    elif sel.get("matchLabels") or sel.get("matchExpressions"):
        _check_template_labels(errs, template, lambda labels: oc.selector_matches(sel, labels))
    check_template(errs, "spec.template", template, kind)


def _selector_update(errs: Errors, new: Obj, old: Obj | None) -> None:
    if old is None:
        return
    a, b = (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
    if a != b:
        oc.raw_invalid(errs, "spec.selector", oc.go_selector(a), IMMUTABLE)


def _replica_status(errs: Errors, status: Obj, counts: tuple[str, ...], bounded: tuple[str, ...]) -> None:
    """The status rules of the replicated kinds: counts non-negative, none above replicas."""
    for name in ("observedGeneration", *counts):
        oc.nonnegative(errs, f"status.{name}", status.get(name))
    replicas = status.get("replicas") or 0
    for name in bounded:
        if (status.get(name) or 0) > replicas:
            errs.invalid(f"status.{name}", status[name], "cannot be greater than status.replicas")
    ready, available = status.get("readyReplicas") or 0, status.get("availableReplicas") or 0
    if available > ready:
        errs.invalid("status.availableReplicas", available, "cannot be greater than readyReplicas")


def validate_deployment(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    if subresource == "status":
        counts = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
        status = obj.get("status") or {}
        _replica_status(errs, status, (*counts, "terminatingReplicas", "collisionCount"), counts[1:4])
        return
    spec = obj.get("spec") or {}
    _apps_spec(errs, spec, "Deployment", "deployment")
    _deployment_strategy(errs, spec.get("strategy") or {})
    for name in ("revisionHistoryLimit", "progressDeadlineSeconds"):
        oc.nonnegative(errs, f"spec.{name}", spec.get(name))
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None and deadline <= (spec.get("minReadySeconds") or 0):
        errs.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")
    _selector_update(errs, obj, old)


def _deployment_strategy(errs: Errors, strategy: Obj) -> None:
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            errs.forbidden(
                "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"
            )
    elif kind == "RollingUpdate":
        if rolling is not None:
            at = "spec.strategy.rollingUpdate"
            unavailable, surge = _or_zero(rolling.get("maxUnavailable")), _or_zero(rolling.get("maxSurge"))
            oc.positive_int_or_percent(errs, f"{at}.maxUnavailable", unavailable)
            oc.positive_int_or_percent(errs, f"{at}.maxSurge", surge)
            if _int_or_percent_value(unavailable) == 0 and _int_or_percent_value(surge) == 0:
                oc.raw_invalid(
                    errs,
                    f"{at}.maxUnavailable",
                    oc.go_int_or_string(unavailable),
                    "may not be 0 when `maxSurge` is 0",
                )
            oc.not_more_than_100_percent(errs, f"{at}.maxUnavailable", unavailable)
    elif kind:
        errs.not_supported("spec.strategy", strategy, ["Recreate", "RollingUpdate"])


def _or_zero(value: int | str | None) -> int | str:
    return 0 if value is None else value


def _int_or_percent_value(value: int | str) -> int:
    if isinstance(value, int):
        return value
    pct = oc.percent_value(value)
    return pct if pct is not None else -1


def validate_replicaset(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    if subresource == "status":
        counts = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        _replica_status(errs, obj.get("status") or {}, (*counts, "terminatingReplicas"), counts[1:])
        return
    _apps_spec(errs, obj.get("spec") or {}, "ReplicaSet", "deployment")
    _selector_update(errs, obj, old)


def validate_statefulset(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    if subresource == "status":
        counts = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
        _replica_status(errs, obj.get("status") or {}, (*counts, "collisionCount"), counts[1:])
        return
    spec = obj.get("spec") or {}
    policy = spec.get("podManagementPolicy")
    if policy and policy not in ("OrderedReady", "Parallel"):
        errs.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
    _sts_update_strategy(errs, spec.get("updateStrategy") or {})
    oc.nonnegative(errs, "spec.ordinals.start", (spec.get("ordinals") or {}).get("start"))
    _apps_spec(errs, spec, "StatefulSet", "statefulset")
    if old is not None:
        old_spec = old.get("spec") or {}
        if any(spec.get(k) != old_spec.get(k) for k in set(spec) | set(old_spec) if k not in _STS_MUTABLE):
            errs.forbidden("spec", _STS_FORBIDDEN)


def _sts_update_strategy(errs: Errors, strategy: Obj) -> None:
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == "OnDelete" and rolling is not None:
        oc.raw_invalid(
            errs,
            "spec.updateStrategy.rollingUpdate",
            "null",
            "only allowed for updateStrategy 'RollingUpdate'",
        )
    elif kind == "RollingUpdate" and rolling is not None:
        oc.nonnegative(errs, "spec.updateStrategy.rollingUpdate.partition", rolling.get("partition"))
        if rolling.get("maxUnavailable") is not None:
            at = "spec.updateStrategy.rollingUpdate.maxUnavailable"
            value = rolling["maxUnavailable"]
            oc.positive_int_or_percent(errs, at, value)
            if _int_or_percent_value(value) == 0:
                oc.raw_invalid(errs, at, oc.go_int_or_string(value), "cannot be 0")
            else:
                oc.not_more_than_100_percent(errs, at, value)
    elif kind and kind not in ("RollingUpdate", "OnDelete"):
        errs.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'")


def validate_replication_controller(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    if subresource == "status":
        counts = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        _replica_status(errs, obj.get("status") or {}, counts, counts[1:])
        return
    spec = obj.get("spec") or {}
    oc.nonnegative(errs, "spec.minReadySeconds", spec.get("minReadySeconds"))
    selector = spec.get("selector") or {}
    if not selector:
        errs.required("spec.selector", "")
    oc.check_labels(errs, "spec.selector", selector)
    oc.nonnegative(errs, "spec.replicas", spec.get("replicas"))
    template = spec.get("template")
    if selector and template is not None:
        _check_template_labels(
            errs, template, lambda labels: all(labels.get(k) == v for k, v in selector.items())
        )
    check_template(errs, "spec.template", spec.get("template"), "ReplicationController")
