"""RBAC as kube-apiserver evaluates it, over the Roles and bindings in the store.

A request is described by :class:`Attributes` (upstream's ``authorizer.Attributes``): who asks
(:class:`UserInfo`), the verb and either the resource (API group, resource, subresource, namespace,
name) or, for a non-resource request, the path. :func:`rule_allows` is upstream's ``RuleAllows``
(``*`` matches any verb, group, resource or URL; ``*/sub`` any resource's subresource; a URL rule
ending in ``*`` is a prefix; an empty ``resourceNames`` matches any name). :class:`RbacAuthorizer`
visits every ClusterRoleBinding, then the RoleBindings of the request's namespace, and allows on
the first rule that matches, with upstream's reason text; the group ``system:masters`` is always
allowed, as kube-apiserver's privileged-group authorizer does.

Decisions are memoized per request shape and dropped whenever a Role, ClusterRole, RoleBinding or
ClusterRoleBinding changes (a store listener); a request allowed whatever its object's name is
memoized without the name, so a scheduler's steady traffic (a binding per pod) costs a dict lookup
or two per request. Aggregated ClusterRoles (``aggregationRule``) are not expanded: their own
``rules`` are used as stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ksched.sim.store import Store, WatchEvent

MASTERS = "system:masters"
"""The group every request of which kube-apiserver allows without consulting RBAC."""
RBAC_KINDS = (
    "clusterroles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
)
CACHE_LIMIT = 10_000
"""Memoized decisions kept before the cache starts over (distinct request shapes are few)."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated identity: upstream's ``user.Info``."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``status.user`` of a TokenReview (``uid`` and ``extra`` only when set)."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra}
        return out


@dataclass(frozen=True, slots=True)
class Attributes:
    """One request to authorize (upstream's ``authorizer.AttributesRecord``)."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    key: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "key",
            (
                self.user.name,
                self.user.groups,
                self.verb,
                self.resource_request,
                self.api_group,
                self.resource,
                self.subresource,
                self.namespace,
                self.name,
                self.path,
            ),
        )


# -- rule matching (upstream: rbac/validation RuleAllows and its helpers) ---------------------------
def verb_matches(rule: dict[str, Any], verb: str) -> bool:
    verbs = rule.get("verbs") or ()
    return "*" in verbs or verb in verbs


def api_group_matches(rule: dict[str, Any], group: str) -> bool:
    groups = rule.get("apiGroups") or ()
    return "*" in groups or group in groups


def resource_matches(rule: dict[str, Any], combined: str, subresource: str) -> bool:
    for r in rule.get("resources") or ():
        if r == "*" or r == combined:
            return True
        if subresource and r == "*/" + subresource:
            return True
    return False


def resource_name_matches(rule: dict[str, Any], name: str) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or name in names


def non_resource_url_matches(rule: dict[str, Any], path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(attrs: Attributes, rule: dict[str, Any]) -> bool:
    """Whether one PolicyRule grants the request."""
    if attrs.resource_request:
        combined = attrs.resource + "/" + attrs.subresource if attrs.subresource else attrs.resource
        return (
            verb_matches(rule, attrs.verb)
            and api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, combined, attrs.subresource)
            and resource_name_matches(rule, attrs.name)
        )
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


# -- subjects and bindings --------------------------------------------------------------------------
def applies_to(subject: dict[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    """upstream's ``appliesToUser``: a User by name, a Group by membership, a ServiceAccount by its
    ``system:serviceaccount:NS:NAME`` user name (NS defaulting to the binding's namespace)."""
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return bool(user.name == f"system:serviceaccount:{ns}:{name}")
    return False


def describe_subject(subject: dict[str, Any], binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


def forbidden_message(attrs: Attributes) -> str:
    """What a 403 says after ``is forbidden:`` (upstream's ``forbiddenMessage``)."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    res = attrs.resource + "/" + attrs.subresource if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return f'User "{user}" cannot {attrs.verb} resource "{res}" in API group "{attrs.api_group}" {where}'


class RbacAuthorizer:
    """Decides requests from the RBAC objects in ``store`` (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[tuple[Any, ...], tuple[bool, str]] = {}
        for kind in RBAC_KINDS:
            store.add_listener(kind, self._invalidate)

    def _invalidate(self, ev: WatchEvent) -> None:
        self._cache.clear()

    def authorize(self, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason): reason is upstream's ``RBAC: allowed by ...`` or why nothing matched."""
        if MASTERS in attrs.user.groups:
            return True, ""
        hit = self._cache.get(attrs.key)
        if hit is not None:
            return hit
        if attrs.name:
            # What is allowed for no name is allowed for every name (only rules without
            # resourceNames match it), so one cached decision covers every pod's binding.
            any_name = self._cache.get((*attrs.key[:8], "", attrs.path))
            if any_name is None:
                any_name = self._decide(replace(attrs, name=""))
            if any_name[0]:
                return any_name
        return self._decide(attrs)

    def _decide(self, attrs: Attributes) -> tuple[bool, str]:
        with self.store.lock:  # no RBAC write (and its invalidation) between evaluating and caching
            decision = self._evaluate(attrs)
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[attrs.key] = decision
        return decision

    def _evaluate(self, attrs: Attributes) -> tuple[bool, str]:
        errors: list[str] = []
        for source, rules in self._rules_for(attrs, errors):
            if any(rule_allows(attrs, r) for r in rules):
                return True, f"RBAC: allowed by {source}"
        return False, ("RBAC: " + ", ".join(errors)) if errors else ""

    def _role_rules(self, kind: str, name: str, namespace: str, errors: list[str]) -> list[dict[str, Any]]:
        if kind == "ClusterRole":
            role = self.store.get("clusterroles.rbac.authorization.k8s.io", name)
            missing = f'clusterrole.rbac.authorization.k8s.io "{name}" not found'
        else:
            role = self.store.get("roles.rbac.authorization.k8s.io", name, namespace)
            missing = f'role.rbac.authorization.k8s.io "{name}" not found'
        if role is None:
            errors.append(missing)
            return []
        return list(role.get("rules") or ())

    def _rules_for(self, attrs: Attributes, errors: list[str]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """(describer, rules) of every binding that applies to the user, cluster-wide ones first."""
        scopes = [("clusterrolebindings.rbac.authorization.k8s.io", "")]
        if attrs.namespace:
            scopes.append(("rolebindings.rbac.authorization.k8s.io", attrs.namespace))
        for kind, ns in scopes:
            table = self.store.table(kind).objects
            for (bns, _), entry in list(table.items()):
                if bns != ns:
                    continue
                binding = entry.obj
                ref = binding.get("roleRef") or {}
                for subject in binding.get("subjects") or ():
                    if not applies_to(subject, attrs.user, ns):
                        continue
                    rules = self._role_rules(ref.get("kind", ""), ref.get("name", ""), ns, errors)
                    name = binding["metadata"]["name"]
                    label = f'ClusterRoleBinding "{name}"' if not ns else f'RoleBinding "{name}/{ns}"'
                    who = describe_subject(subject, ns)
                    yield f'{label} of {ref.get("kind")} "{ref.get("name")}" to {who}', rules
                    break
