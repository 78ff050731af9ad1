"""The pod spec parts a scheduler reads: tolerations, affinity, topology spread, scheduling gates.

kube-apiserver v1.35's ``validateTolerations``, ``validateAffinity`` (node selector terms, pod
affinity terms with their label selectors and topology keys, weights 1-100),
``validateTopologySpreadConstraints`` and ``validateSchedulingGates``, with upstream's field paths
and messages. Also used for node taints' effect (``validate_taint_effect``).
"""

from __future__ import annotations

from typing import Any

from ksched.model.labels import dns1123_label_errors, label_value_errors, qualified_name_errors
from ksched.sim._storage_validation import (
    DecodeError,
    Errors,
    check_label_selector,
    check_node_selector,
    mapping,
    strings,
    text,
)

Obj = dict[str, Any]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
SPREAD_POLICIES = ("Honor", "Ignore")
_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
_WEIGHT_RANGE = "must be in the range 1-100"


def validate_scheduling(errs: Errors, spec: Obj, at: str) -> None:
    """Every scheduling-related part of a pod spec that is set."""
    if spec.get("tolerations"):
        validate_tolerations(errs, spec["tolerations"], f"{at}.tolerations")
    if spec.get("affinity"):
        _validate_affinity(errs, mapping(spec["affinity"], f"{at}.affinity"), f"{at}.affinity")
    if spec.get("topologySpreadConstraints"):
        _validate_spread(errs, spec["topologySpreadConstraints"], f"{at}.topologySpreadConstraints")
    if spec.get("schedulingGates"):
        _validate_gates(errs, spec["schedulingGates"], f"{at}.schedulingGates")


def validate_taint_effect(errs: Errors, effect: Any, field: str, *, allow_empty: bool) -> None:
    """``validateTaintEffect``."""
    if not effect:
        if not allow_empty:
            errs.required(field)
        return
    if effect not in TAINT_EFFECTS:
        errs.not_supported(field, effect, TAINT_EFFECTS)


def validate_tolerations(errs: Errors, tolerations: Any, at: str) -> None:
    """``validateTolerations``: key, operator/value pairing, effect, tolerationSeconds with NoExecute."""
    for i, raw in enumerate(_list(tolerations, at)):
        here = f"{at}[{i}]"
        tol = mapping(raw, here)
        key = text(tol.get("key"), f"{here}.key")
        op = text(tol.get("operator"), f"{here}.operator")
        value = text(tol.get("value"), f"{here}.value")
        effect = text(tol.get("effect"), f"{here}.effect")
        if key:
            for msg in qualified_name_errors(key):
                errs.invalid(f"{here}.key", key, msg)
        elif op != "Exists":
            errs.invalid(
                f"{here}.operator",
                op,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.invalid(
                f"{here}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"
            )
        if op in ("Equal", ""):
            msgs = label_value_errors(value)
            if msgs:
                errs.invalid(f"{here}.operator", value, ";".join(msgs))
        elif op == "Exists":
            if value:
                errs.invalid(f"{here}.operator", tol, "value must be empty when `operator` is 'Exists'")
        else:
            errs.not_supported(f"{here}.operator", op, TOLERATION_OPERATORS)
        validate_taint_effect(errs, effect, f"{here}.effect", allow_empty=True)


def _validate_affinity(errs: Errors, affinity: Obj, at: str) -> None:
    node = affinity.get("nodeAffinity")
    if node:
        node = mapping(node, f"{at}.nodeAffinity")
        required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            check_node_selector(
                errs, f"{at}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", required
            )
        prefs = f"{at}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        for i, raw in enumerate(_list(node.get("preferredDuringSchedulingIgnoredDuringExecution"), prefs)):
            term = mapping(raw, f"{prefs}[{i}]")
            _check_weight(errs, term, f"{prefs}[{i}].weight")
            preference = {"nodeSelectorTerms": [mapping(term.get("preference"), f"{prefs}[{i}].preference")]}
            sub = Errors()
            check_node_selector(sub, f"{prefs}[{i}]", preference)
            for reason, field, message in sub.causes:
                errs.causes.append((reason, field.replace(".nodeSelectorTerms[0]", ".preference"), message))
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind):
            _validate_pod_affinity(errs, mapping(affinity[kind], f"{at}.{kind}"), f"{at}.{kind}")


def _check_weight(errs: Errors, term: Obj, field: str) -> None:
    weight = term.get("weight")
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        errs.invalid(field, weight, _WEIGHT_RANGE)


def _validate_pod_affinity(errs: Errors, affinity: Obj, at: str) -> None:
    required = f"{at}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(_list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), required)):
        _validate_pod_affinity_term(errs, mapping(raw, f"{required}[{i}]"), f"{required}[{i}]")
    preferred = f"{at}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(
        _list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), preferred)
    ):
        term = mapping(raw, f"{preferred}[{i}]")
        _check_weight(errs, term, f"{preferred}[{i}].weight")
        inner = f"{preferred}[{i}].podAffinityTerm"
        _validate_pod_affinity_term(errs, mapping(term.get("podAffinityTerm"), inner), inner)


def _validate_pod_affinity_term(errs: Errors, term: Obj, at: str) -> None:
    """``validatePodAffinityTerm``: selectors, namespaces, a topology key."""
    if term.get("labelSelector") is not None:
        check_label_selector(errs, f"{at}.labelSelector", term["labelSelector"])
    if term.get("namespaceSelector") is not None:
        check_label_selector(errs, f"{at}.namespaceSelector", term["namespaceSelector"])
    for name in strings(term.get("namespaces"), f"{at}.namespaces"):
        for msg in dns1123_label_errors(name):
            errs.invalid(f"{at}.namespace", name, msg)
    key = text(term.get("topologyKey"), f"{at}.topologyKey")
    if not key:
        errs.required(f"{at}.topologyKey", "can not be empty")
    for msg in qualified_name_errors(key):
        errs.invalid(f"{at}.topologyKey", key, msg)


def _validate_spread(errs: Errors, constraints: Any, at: str) -> None:
    """``validateTopologySpreadConstraints``."""
    items = _list(constraints, at)
    seen: set[tuple[str, str]] = set()
    for i, raw in enumerate(items):
        here = f"{at}[{i}]"
        c = mapping(raw, here)
        skew = c.get("maxSkew")
        if not isinstance(skew, int) or skew <= 0:
            errs.invalid(f"{here}.maxSkew", skew, "must be greater than zero")
        key = text(c.get("topologyKey"), f"{here}.topologyKey")
        if not key:
            errs.required(f"{here}.topologyKey", "can not be empty")
        else:
            for msg in qualified_name_errors(key):
                errs.invalid(f"{here}.topologyKey", key, msg)
        action = text(c.get("whenUnsatisfiable"), f"{here}.whenUnsatisfiable")
        if action not in WHEN_UNSATISFIABLE:
            errs.not_supported(f"{here}.whenUnsatisfiable", action, WHEN_UNSATISFIABLE)
        if (key, action) in seen:
            errs.duplicate(f"{here}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}")
        seen.add((key, action))
        _check_min_domains(errs, c.get("minDomains"), action, f"{here}.minDomains")
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = c.get(policy)
            if value is not None and value not in SPREAD_POLICIES:
                errs.not_supported(f"{here}.{policy}", value, SPREAD_POLICIES)
        if c.get("labelSelector") is not None:
            check_label_selector(errs, f"{here}.labelSelector", c["labelSelector"])


def _check_min_domains(errs: Errors, value: Any, action: str, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, int) or value <= 0:
        errs.invalid(field, value, "must be greater than zero")
    if action != "DoNotSchedule":
        errs.invalid(
            field, value, f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
        )


def _validate_gates(errs: Errors, gates: Any, at: str) -> None:
    """``validateSchedulingGates``: qualified names, no duplicates (reported at ``schedulingGates[i]``)."""
    seen: set[str] = set()
    for i, raw in enumerate(_list(gates, at)):
        name = text(mapping(raw, f"{at}[{i}]").get("name"), f"{at}[{i}].name")
        for msg in qualified_name_errors(name):
            errs.invalid(f"{at}[{i}]", name, msg)
        if name in seen:
            errs.duplicate(f"{at}[{i}]", name)
        seen.add(name)


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError(f"{field}: expected a list")
    return value
