"""What a request asks for, in authorization terms: upstream's ``RequestInfoFactory``.

``/api/v1/...`` and ``/apis/GROUP/VERSION/...`` are resource requests (verb from the method: get or
list, watch with ``?watch=true`` or a ``/watch/`` segment, create, update, patch, delete or
deletecollection; namespace, resource, name and subresource from the path; a list or watch
narrowed to one object by ``fieldSelector=metadata.name=X`` names it, which is what lets a Role
with ``resourceNames`` grant an informer on one ConfigMap). Anything else, discovery included, is
a non-resource request whose verb is the lower-case method.
"""

from __future__ import annotations

from collections.abc import Mapping

from ksched.sim._rbac import Attributes, UserInfo

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_ITEM_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_COLLECTION_VERBS = {
    "GET": "list",
    "HEAD": "list",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "deletecollection",
}


def _non_resource(user: UserInfo, method: str, path: str) -> Attributes:
    return Attributes(user, method.lower(), resource_request=False, path=path)


def _name_from_selector(query: Mapping[str, str]) -> str:
    for term in query.get("fieldSelector", "").split(","):
        key, sep, value = term.partition("=")
        if sep and key.strip() == "metadata.name":
            return value.lstrip("=").strip()
    return ""


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The :class:`Attributes` of one HTTP request."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return _non_resource(user, method, path)
    watch = False
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
        if not rest:
            return _non_resource(user, method, path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    verbs = _ITEM_VERBS if name else _COLLECTION_VERBS
    verb = verbs.get(method, method.lower())
    if verb == "list":
        if watch or query.get("watch") in ("true", "1"):  # as the server itself decides
            verb = "watch"
        name = _name_from_selector(query)
    elif watch and verb == "get":
        verb = "watch"
    return Attributes(user, verb, True, group, resource, sub, namespace, name, path)
