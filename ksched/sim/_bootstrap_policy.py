"""The part of kube-apiserver's bootstrap RBAC policy a scheduler and its operators rely on.

Rules as upstream ships them (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go and its
testdata cluster-roles.yaml, cluster-role-bindings.yaml, namespace-roles.yaml): ``cluster-admin``
(bound to ``system:masters``), ``system:discovery`` and ``system:basic-user`` (authenticated users),
``system:public-info-viewer`` (everyone, anonymous included: health checks and ``/version``),
``system:monitoring``, ``system:auth-delegator``, ``system:kube-scheduler`` and
``system:volume-scheduler`` (both bound to the user ``system:kube-scheduler``), and in kube-system
the Roles ``extension-apiserver-authentication-reader`` and ``system::leader-locking-kube-scheduler``
with their RoleBindings. The other bootstrap roles (kubelets, controllers, aggregated
admin/edit/view) are not installed: nothing the embedded cluster serves needs them.
"""

from __future__ import annotations

from typing import Any

_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
_RBAC = "rbac.authorization.k8s.io"
_READ = ("get", "list", "watch")


def _rule(
    verbs: tuple[str, ...], groups: tuple[str, ...], resources: tuple[str, ...], names: tuple[str, ...] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
    if names:
        out["resourceNames"] = list(names)
    return out


def _urls(verbs: tuple[str, ...], urls: tuple[str, ...]) -> dict[str, Any]:
    return {"nonResourceURLs": list(urls), "verbs": list(verbs)}


def _meta(name: str, namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS), "annotations": dict(_ANNOTATIONS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


SCHEDULER_RULES = (
    _rule(("create", "patch", "update"), ("", "events.k8s.io"), ("events",)),
    _rule(("create",), ("coordination.k8s.io",), ("leases",)),
    _rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("kube-scheduler",)),
    _rule(_READ, ("",), ("nodes",)),
    _rule(("delete", "get", "list", "watch"), ("",), ("pods",)),
    _rule(("create",), ("",), ("bindings", "pods/binding")),
    _rule(("patch", "update"), ("",), ("pods/status",)),
    _rule(_READ, ("",), ("replicationcontrollers", "services")),
    _rule(_READ, ("apps", "extensions"), ("replicasets",)),
    _rule(_READ, ("apps",), ("statefulsets",)),
    _rule(_READ, ("policy",), ("poddisruptionbudgets",)),
    _rule(_READ, ("",), ("persistentvolumeclaims", "persistentvolumes")),
    _rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
    _rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
    _rule(_READ, ("storage.k8s.io",), ("csinodes",)),
    _rule(_READ, ("",), ("namespaces",)),
    _rule(_READ, ("storage.k8s.io",), ("csidrivers",)),
    _rule(_READ, ("storage.k8s.io",), ("csistoragecapacities",)),
    # NodeVolumeLimits counts a node's attachments from VolumeAttachments in v1.35's scheduler.
    _rule(_READ, ("storage.k8s.io",), ("volumeattachments",)),
)
"""``system:kube-scheduler``, rule for rule, without the dynamic resource allocation rules
(``resource.k8s.io``, ``pods/finalizers``): the embedded cluster does not serve that API."""

VOLUME_SCHEDULER_RULES = (
    _rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumes",)),
    _rule(_READ, ("storage.k8s.io",), ("storageclasses",)),
    _rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumeclaims",)),
)

CLUSTER_ROLES: dict[str, tuple[dict[str, Any], ...]] = {
    "cluster-admin": (_rule(("*",), ("*",), ("*",)), _urls(("*",), ("*",))),
    "system:discovery": (
        _urls(
            ("get",),
            (
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ),
        ),
    ),
    "system:basic-user": (
        _rule(
            ("create",), ("authorization.k8s.io",), ("selfsubjectaccessreviews", "selfsubjectrulesreviews")
        ),
        _rule(("create",), ("authentication.k8s.io",), ("selfsubjectreviews",)),
    ),
    "system:public-info-viewer": (
        _urls(("get",), ("/healthz", "/livez", "/readyz", "/version", "/version/")),
    ),
    "system:monitoring": (
        _urls(
            ("get",),
            (
                "/healthz",
                "/healthz/*",
                "/livez",
                "/livez/*",
                "/metrics",
                "/metrics/slis",
                "/readyz",
                "/readyz/*",
            ),
        ),
    ),
    "system:auth-delegator": (
        _rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
        _rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
    ),
    "system:kube-scheduler": SCHEDULER_RULES,
    "system:volume-scheduler": VOLUME_SCHEDULER_RULES,
}

CLUSTER_ROLE_BINDINGS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "cluster-admin": ("cluster-admin", (("Group", "system:masters"),)),
    "system:discovery": ("system:discovery", (("Group", "system:authenticated"),)),
    "system:basic-user": ("system:basic-user", (("Group", "system:authenticated"),)),
    "system:public-info-viewer": (
        "system:public-info-viewer",
        (("Group", "system:authenticated"), ("Group", "system:unauthenticated")),
    ),
    "system:monitoring": ("system:monitoring", (("Group", "system:monitoring"),)),
    "system:kube-scheduler": ("system:kube-scheduler", (("User", "system:kube-scheduler"),)),
    "system:volume-scheduler": ("system:volume-scheduler", (("User", "system:kube-scheduler"),)),
}
"""binding name -> (ClusterRole, subjects)."""

KUBE_SYSTEM_ROLES: dict[str, tuple[dict[str, Any], ...]] = {
    "extension-apiserver-authentication-reader": (
        _rule(_READ, ("",), ("configmaps",), ("extension-apiserver-authentication",)),
    ),
    "system::leader-locking-kube-scheduler": (
        _rule(("watch",), ("",), ("configmaps",)),
        _rule(("get", "update"), ("",), ("configmaps",), ("kube-scheduler",)),
    ),
}

KUBE_SYSTEM_ROLE_BINDINGS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "system::extension-apiserver-authentication-reader": (
        "extension-apiserver-authentication-reader",
        (("User", "system:kube-controller-manager"), ("User", "system:kube-scheduler")),
    ),
    "system::leader-locking-kube-scheduler": (
        "system::leader-locking-kube-scheduler",
        (("User", "system:kube-scheduler"), ("ServiceAccount", "kube-scheduler")),
    ),
}


def _subjects(subjects: tuple[tuple[str, str], ...], namespace: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, name in subjects:
        if kind == "ServiceAccount":
            out.append({"kind": kind, "name": name, "namespace": namespace or "kube-system"})
        else:
            out.append({"apiGroup": _RBAC, "kind": kind, "name": name})
    return out


def bootstrap_objects() -> list[tuple[str, str, dict[str, Any]]]:
    """(store key, namespace, object) for every role and binding above, in creation order."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for name, rules in CLUSTER_ROLES.items():
        out.append(
            ("clusterroles.rbac.authorization.k8s.io", "", {"metadata": _meta(name), "rules": list(rules)})
        )
    for name, (role, subjects) in CLUSTER_ROLE_BINDINGS.items():
        body = {
            "metadata": _meta(name),
            "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
            "subjects": _subjects(subjects, ""),
        }
        out.append(("clusterrolebindings.rbac.authorization.k8s.io", "", body))
    for name, rules in KUBE_SYSTEM_ROLES.items():
        body = {"metadata": _meta(name, "kube-system"), "rules": list(rules)}
        out.append(("roles.rbac.authorization.k8s.io", "kube-system", body))
    for name, (role, subjects) in KUBE_SYSTEM_ROLE_BINDINGS.items():
        body = {
            "metadata": _meta(name, "kube-system"),
            "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": role},
            "subjects": _subjects(subjects, "kube-system"),
        }
        out.append(("rolebindings.rbac.authorization.k8s.io", "kube-system", body))
    return out
