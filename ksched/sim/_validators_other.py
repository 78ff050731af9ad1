"""Validation of the other served kinds (namespaces, events, leases, PDBs, workloads, RBAC, ...).

After kube-apiserver v1.35's ``pkg/apis/core/validation`` (Namespace, Event, ConfigMap, Service),
``pkg/apis/coordination/validation`` (Lease), ``pkg/apis/policy/validation``
(PodDisruptionBudget), ``pkg/apis/rbac/validation`` and, for the workload kinds,
:mod:`ksched.sim._other_workloads`. Each validator adds upstream's field errors to ``errs``;
:mod:`ksched.sim._admission` answers them as one 422. ObjectMeta (names, labels, annotations) is
:mod:`ksched.sim._meta_validation`'s.

Not checked: a Service's IP families, node ports, load balancer and session affinity fields, and
its ``clusterIP`` values (only that a set one does not change); ServiceAccounts have nothing of
their own to check. The review kinds are never stored and are checked where they are answered
(:mod:`ksched.sim._reviews`).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from ksched.model.labels import dns1123_subdomain_errors, max_len_error, qualified_name_errors, regex_error
from ksched.sim import _other_common as oc
from ksched.sim import _other_workloads as workloads
from ksched.sim._storage_validation import Errors, KindValidator

Obj = dict[str, Any]

_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
_CONFIG_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")
_CONFIG_KEY_ERROR = regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.'",
    "[-._a-zA-Z0-9]+",
    "key.name",
    "KEY_NAME",
    "key-name",
)
MAX_CONFIG_SIZE = 1024 * 1024
_LEASE_STRATEGIES = ("OldestEmulationVersion",)
_PDB_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
_RBAC_GROUP = "rbac.authorization.k8s.io"
_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


def validate_namespace(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    """Finalizers are qualified names, bare ones standard; a status write keeps phase and deletion in step."""
    for name in (obj.get("spec") or {}).get("finalizers") or []:
        name = name or ""
        for msg in qualified_name_errors(name):
            errs.invalid("spec.finalizers", name, msg)
        if "/" not in name and name not in _STANDARD_FINALIZERS:
            errs.invalid(
                "spec.finalizers", name, "name is neither a standard finalizer name nor is it fully qualified"
            )
    if subresource != "status":
        return
    phase = (obj.get("status") or {}).get("phase") or ""
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    if phase and not deleting and phase != "Active":
        errs.invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")
    elif phase and deleting and phase != "Terminating":
        errs.invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")


def validate_event(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    """``legacyValidateEvent`` as for a core/v1 request (events.k8s.io's are :mod:`ksched.sim._events`'s)."""
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    involved = (obj.get("involvedObject") or {}).get("namespace") or ""
    if not obj.get("eventTime"):
        mismatch = namespace not in ("", "default") if not involved else namespace != involved
    else:
        mismatch = not involved and namespace not in ("default", "kube-system")
        _new_style_event(errs, obj)
    if mismatch:
        errs.invalid("involvedObject.namespace", involved, "does not match event.namespace")
    for msg in dns1123_subdomain_errors(namespace):
        errs.invalid("namespace", namespace, msg)


def _new_style_event(errs: Errors, obj: Obj) -> None:
    controller = obj.get("reportingComponent") or ""
    if not controller:
        errs.required("source", "")
    for msg in qualified_name_errors(controller):
        errs.invalid("source", controller, msg)
    for field, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        value = obj.get(field) or ""
        if not value:
            errs.required(field, "")
        if len(value) > limit:
            errs.invalid(field, "", f"can have at most {limit} characters")
    if len(obj.get("message") or "") > 1024:
        errs.invalid("message", "", "can have at most 1024 characters")


def validate_lease(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    spec = obj.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")
    strategy = spec.get("strategy")
    if strategy is not None:  # upstream names the field twice: spec.strategy.strategy
        if "/" not in strategy:
            if strategy not in _LEASE_STRATEGIES:
                errs.not_supported("spec.strategy.strategy", strategy, _LEASE_STRATEGIES)
        else:
            for msg in qualified_name_errors(strategy):
                errs.invalid("spec.strategy.strategy", strategy, msg)
    if spec.get("preferredHolder") and not strategy:
        errs.forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined")


def validate_pdb(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    if subresource == "status":
        status = obj.get("status") or {}
        for name in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            oc.nonnegative(errs, f"status.{name}", status.get(name))
        return
    spec = obj.get("spec") or {}
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    if low is not None and high is not None:
        errs.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")
    for name, value in (("minAvailable", low), ("maxUnavailable", high)):
        if value is not None:
            oc.positive_int_or_percent(errs, f"spec.{name}", value)
            oc.not_more_than_100_percent(errs, f"spec.{name}", value)
    oc.check_selector(errs, "spec.selector", spec.get("selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _PDB_POLICIES:
        errs.not_supported("spec.unhealthyPodEvictionPolicy", policy, _PDB_POLICIES)


def config_key_errors(key: str) -> list[str]:
    """apimachinery ``IsConfigMapKey``."""
    msgs = [max_len_error(253)] if len(key.encode()) > 253 else []
    if not _CONFIG_KEY_RE.fullmatch(key):
        msgs.append(_CONFIG_KEY_ERROR)
    if key in (".", ".."):
        msgs.append(f"must not be '{key}'")
    elif key.startswith(".."):
        msgs.append("must not start with '..'")
    return msgs


def validate_configmap(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    if old is not None and old.get("immutable"):
        if not obj.get("immutable"):
            errs.forbidden("immutable", _IMMUTABLE_WHEN_SET)
        for field in ("data", "binaryData"):
            if obj.get(field) != old.get(field):
                errs.forbidden(field, _IMMUTABLE_WHEN_SET)
    total = 0
    for key, value in data.items():
        for msg in config_key_errors(key):
            errs.invalid(f"data[{key}]", key, msg)
        if key in binary:
            errs.invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
        total += len((value or "").encode())
    for key, value in binary.items():
        for msg in config_key_errors(key):
            errs.invalid(f"binaryData[{key}]", key, msg)
        total += len(base64.b64decode(value or ""))
    if total > MAX_CONFIG_SIZE:
        errs.too_long("", MAX_CONFIG_SIZE)


def _check_rule(errs: Errors, at: str, rule: Obj, namespaced: bool) -> None:
    """``ValidatePolicyRule``."""
    if not rule.get("verbs"):
        errs.required(f"{at}.verbs", "verbs must contain at least one value")
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            oc.raw_invalid(
                errs,
                f"{at}.nonResourceURLs",
                oc.go_strings(urls),
                "namespaced rules cannot apply to non-resource URLs",
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            detail = "rules cannot apply to both regular resources and non-resource URLs"
            oc.raw_invalid(errs, f"{at}.nonResourceURLs", oc.go_strings(urls), detail)
        return
    if not rule.get("apiGroups"):
        errs.required(f"{at}.apiGroups", "resource rules must supply at least one api group")
    if not rule.get("resources"):
        errs.required(f"{at}.resources", "resource rules must supply at least one resource")


def _role(namespaced: bool) -> KindValidator:
    def validate(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
        for i, rule in enumerate(obj.get("rules") or []):
            _check_rule(errs, f"rules[{i}]", rule or {}, namespaced)
        aggregation = None if namespaced else obj.get("aggregationRule")
        if aggregation is not None:
            selectors = aggregation.get("clusterRoleSelectors") or []
            if not selectors:
                detail = "at least one clusterRoleSelector required if aggregationRule is non-nil"
                errs.required("aggregationRule.clusterRoleSelectors", detail)
            for i, sel in enumerate(selectors):
                at = f"aggregationRule.clusterRoleSelectors[{i}]"
                oc.check_selector(errs, at, sel or {})
                if not oc.selector_parses(sel or {}):
                    oc.raw_invalid(errs, at, oc.go_selector(sel or {}), "invalid label selector.")

    return validate


def _check_subject(errs: Errors, at: str, subject: Obj, namespaced: bool) -> None:
    """``ValidateRoleBindingSubject``."""
    name, kind, group = subject.get("name") or "", subject.get("kind") or "", subject.get("apiGroup") or ""
    if not name:
        errs.required(f"{at}.name", "")
    if kind == "ServiceAccount":
        for msg in dns1123_subdomain_errors(name) if name else []:
            errs.invalid(f"{at}.name", name, msg)
        if group:
            errs.not_supported(f"{at}.apiGroup", group, [""])
        if not namespaced and not subject.get("namespace"):
            errs.required(f"{at}.namespace", "")
    elif kind in ("User", "Group"):
        if group != _RBAC_GROUP:
            errs.not_supported(f"{at}.apiGroup", group, [_RBAC_GROUP])
    else:
        errs.not_supported(f"{at}.kind", kind, ["ServiceAccount", "User", "Group"])


def _binding(namespaced: bool) -> KindValidator:
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]

    def validate(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
        ref = obj.get("roleRef") or {}
        if (ref.get("apiGroup") or "") != _RBAC_GROUP:
            errs.not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [_RBAC_GROUP])
        if (ref.get("kind") or "") not in kinds:
            errs.not_supported("roleRef.kind", ref.get("kind") or "", kinds)
        name = ref.get("name") or ""
        if not name:
            errs.required("roleRef.name", "")
        for msg in oc.path_segment_errors(name):
            errs.invalid("roleRef.name", name, msg)
        for i, subject in enumerate(obj.get("subjects") or []):
            _check_subject(errs, f"subjects[{i}]", subject or {}, namespaced)
        if old is not None and _role_ref(ref) != _role_ref(old.get("roleRef") or {}):
            shown = "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}".format(
                *(oc.go_quote(v) for v in _role_ref(ref))
            )
            oc.raw_invalid(errs, "roleRef", shown, "cannot change roleRef")

    return validate


def _role_ref(ref: Obj) -> tuple[str, str, str]:
    return ref.get("apiGroup") or "", ref.get("kind") or "", ref.get("name") or ""


_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")


def port_name_errors(name: str) -> list[str]:
    """apimachinery ``IsValidPortName``."""
    msgs = [max_len_error(15)] if len(name) > 15 else []
    if not _PORT_NAME_CHARS.fullmatch(name):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in name:
        msgs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        msgs.append("must not begin or end with a hyphen")
    return msgs


def _check_service_port(errs: Errors, at: str, port: Obj, require_name: bool, names: set[str]) -> None:
    name = port.get("name") or ""
    if require_name and not name:
        errs.required(f"{at}.name", "")
    elif name:
        for msg in oc.dns1123_label_errors(name):
            errs.invalid(f"{at}.name", name, msg)
        if name in names:
            errs.duplicate(f"{at}.name", name)
        names.add(name)
    number = port.get("port") or 0
    if not 1 <= number <= 65535:
        errs.invalid(f"{at}.port", number, _PORT_RANGE)
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        errs.not_supported(f"{at}.protocol", protocol, _PROTOCOLS)
    target = port.get("targetPort")
    if isinstance(target, int) and not 1 <= target <= 65535:
        errs.invalid(f"{at}.targetPort", target, _PORT_RANGE)
    elif isinstance(target, str):
        for msg in port_name_errors(target):
            errs.invalid(f"{at}.targetPort", target, msg)


def validate_service(errs: Errors, obj: Obj, old: Obj | None, subresource: str) -> None:
    """Type, ports, selector and external name; a set ``clusterIP`` may not change."""
    if subresource == "status":
        return
    spec = obj.get("spec") or {}
    kind = spec.get("type")
    if kind is not None and kind not in _SERVICE_TYPES:
        errs.not_supported("spec.type", kind, _SERVICE_TYPES)
    ports = spec.get("ports") or []
    if not ports and spec.get("clusterIP") != "None" and kind != "ExternalName":
        errs.required("spec.ports", "")
    names: set[str] = set()
    for i, port in enumerate(ports):
        _check_service_port(errs, f"spec.ports[{i}]", port or {}, len(ports) > 1, names)
    oc.check_labels(errs, "spec.selector", spec.get("selector"))
    if kind == "ExternalName":
        external = spec.get("externalName") or ""
        if not external:
            errs.required("spec.externalName", "")
        for msg in dns1123_subdomain_errors(external.removesuffix(".")) if external else []:
            errs.invalid("spec.externalName", external, msg)
    if old is not None:
        before = (old.get("spec") or {}).get("clusterIP") or ""
        after = spec.get("clusterIP") or ""
        external = "ExternalName" in (kind, (old.get("spec") or {}).get("type"))
        if before and after and before != after and not external:
            errs.invalid("spec.clusterIPs[0]", after, "may not change once set")


VALIDATORS: dict[str, KindValidator] = {
    "namespaces": validate_namespace,
    "events": validate_event,
    "leases.coordination.k8s.io": validate_lease,
    "poddisruptionbudgets.policy": validate_pdb,
    "configmaps": validate_configmap,
    "deployments.apps": workloads.validate_deployment,
    "replicasets.apps": workloads.validate_replicaset,
    "statefulsets.apps": workloads.validate_statefulset,
    "replicationcontrollers": workloads.validate_replication_controller,
    "roles.rbac.authorization.k8s.io": _role(True),
    "clusterroles.rbac.authorization.k8s.io": _role(False),
    "rolebindings.rbac.authorization.k8s.io": _binding(True),
    "clusterrolebindings.rbac.authorization.k8s.io": _binding(False),
    "services": validate_service,
}
"""Store key -> the kind's validation (beyond ObjectMeta)."""
