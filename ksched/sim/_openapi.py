"""What the sim's OpenAPI documents (v2 and v3) share: upstream's schemas and the served operations.

The schemas are kube-apiserver v1.35's own definitions for the served kinds, vendored compressed in
``openapi-definitions.json.gz`` (regenerate with ``python -m ksched.sim.openapi_gen``). They are
read on the first OpenAPI request and kept: serving the API never pays for them.

:func:`operations` lists, per served resource, the operations kube-apiserver publishes for it
(list, create, deletecollection, read, replace, patch, delete, the ``status``, ``binding`` and
``eviction`` subresources), with upstream's operation ids, ``x-kubernetes-action`` and
``x-kubernetes-group-version-kind``. kubectl reads the PATCH operations: the ``fieldValidation``
parameter tells it the server validates fields, the PATCH content types that the kind takes
strategic merge patches.
"""

from __future__ import annotations

import functools
import gzip
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson

from ksched.sim import _resources as res
from ksched.sim._patch import JSON_PATCH, MERGE, STRATEGIC

DEFINITIONS_FILE = "openapi-definitions.json.gz"
PATCH_TYPES = (JSON_PATCH, MERGE, STRATEGIC)
"""What the PATCH operations consume: the patch types :mod:`ksched.sim._patch` applies. Upstream also
lists ``application/apply-patch+yaml``; the sim has no server-side apply, so it is not offered."""
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
STATUS, DELETE_OPTIONS, PATCH = _META + "Status", _META + "DeleteOptions", _META + "Patch"

GVK = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    where: str
    """``path`` or ``query``."""
    type: str = "string"


@dataclass(frozen=True, slots=True)
class Operation:
    """One method on one path, in neither OpenAPI version's shape."""

    path: str
    method: str
    operation_id: str
    action: str
    gvk: GVK
    tag: str
    params: tuple[Param, ...]
    response: str
    """Definition name of the 200 body."""
    body: str = ""
    """Definition name of the request body, if there is one."""
    body_required: bool = True


@functools.cache
def definitions() -> dict[str, Any]:
    """Upstream's definitions for the served kinds, by definition name (read once)."""
    raw = resources.files("ksched.sim").joinpath(DEFINITIONS_FILE).read_bytes()
    defs: dict[str, Any] = orjson.loads(gzip.decompress(raw))["definitions"]
    return defs


@functools.cache
def kubernetes_version() -> str:
    raw = resources.files("ksched.sim").joinpath(DEFINITIONS_FILE).read_bytes()
    return str(orjson.loads(gzip.decompress(raw))["kubernetesVersion"])


@functools.cache
def by_gvk() -> dict[GVK, str]:
    """Definition name of every group/version/kind the definitions declare."""
    out: dict[GVK, str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            out.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return out


def referenced(names: set[str]) -> set[str]:
    """``names`` and every definition they reference, transitively."""
    defs, keep, todo = definitions(), set(), list(names)
    while todo:
        name = todo.pop()
        if name not in keep:
            keep.add(name)
            todo.extend(_refs(defs[name]) - keep)
    return keep


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        out = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            out |= _refs(value)
        return out
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def gv_path(group: str, version: str) -> str:
    """``api/v1`` or ``apis/G/V``."""
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _camel_group(group: str, version: str) -> str:
    """Upstream's operation-id infix: ``CoreV1``, ``RbacAuthorizationV1``, ``StorageV1``."""
    words = group.removesuffix(".k8s.io").split(".") if group else ["core"]
    return "".join(w[:1].upper() + w[1:] for w in words) + version.capitalize()


def _tag(group: str, version: str) -> str:
    """Upstream's tag: ``core_v1``, ``rbacAuthorization_v1``."""
    camel = _camel_group(group, version).removesuffix(version.capitalize())
    return f"{camel[:1].lower()}{camel[1:]}_{version}"


_WRITE = (Param("fieldManager", "query"), Param("fieldValidation", "query"))
_LIST = (
    Param("labelSelector", "query"),
    Param("fieldSelector", "query"),
    Param("limit", "query", "integer"),
    Param("continue", "query"),
    Param("resourceVersion", "query"),
    Param("watch", "query", "boolean"),
    Param("allowWatchBookmarks", "query", "boolean"),
    Param("timeoutSeconds", "query", "integer"),
)
_DELETE = (Param("gracePeriodSeconds", "query", "integer"),)


def _resource_operations(r: res.ResourceType) -> list[Operation]:
    """The operations on one resource and its subresources."""
    gvk = (r.group, r.version, r.kind)
    if r.verbs == res.CREATE_ONLY:
        return [_create_only(r)]
    kind_def, list_def = by_gvk()[gvk], by_gvk()[(r.group, r.version, r.list_kind)]
    base, infix = "/" + gv_path(r.group, r.version), _camel_group(r.group, r.version)
    ns = "Namespaced" if r.namespaced else ""
    coll = f"{base}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
    item = coll + "/{name}"
    scope = (Param("namespace", "path"),) if r.namespaced else ()
    named = (Param("name", "path"), *scope)
    tag = _tag(r.group, r.version)

    def op(
        path: str, method: str, op_id: str, action: str, params: tuple[Param, ...], **kw: Any
    ) -> Operation:
        kw.setdefault("response", kind_def)
        return Operation(path, method, op_id, action, kw.pop("gvk", gvk), tag, params, **kw)

    deleting = {"response": STATUS, "body": DELETE_OPTIONS, "body_required": False}
    ops = [
        op(coll, "get", f"list{infix}{ns}{r.kind}", "list", scope + _LIST, response=list_def),
        op(coll, "post", f"create{infix}{ns}{r.kind}", "post", scope + _WRITE, body=kind_def),
        op(
            coll,
            "delete",
            f"delete{infix}Collection{ns}{r.kind}",
            "deletecollection",
            scope + _LIST + _DELETE,
            **deleting,
        ),
        op(item, "get", f"read{infix}{ns}{r.kind}", "get", named),
        op(item, "put", f"replace{infix}{ns}{r.kind}", "put", named + _WRITE, body=kind_def),
        op(item, "patch", f"patch{infix}{ns}{r.kind}", "patch", named + _WRITE, body=PATCH),
        op(item, "delete", f"delete{infix}{ns}{r.kind}", "delete", named + _DELETE, **deleting),
    ]
    if r.namespaced:
        ops.append(
            op(
                f"{base}/{r.plural}",
                "get",
                f"list{infix}{r.kind}ForAllNamespaces",
                "list",
                _LIST,
                response=list_def,
            )
        )
    for sub, sub_kind in r.subresources.items():
        path, suffix = f"{item}/{sub}", f"{ns}{r.kind}{sub.capitalize()}"
        if sub == "status":
            ops += [
                op(path, "get", f"read{infix}{suffix}", "get", named),
                op(path, "put", f"replace{infix}{suffix}", "put", named + _WRITE, body=kind_def),
                op(path, "patch", f"patch{infix}{suffix}", "patch", named + _WRITE, body=PATCH),
            ]
            continue
        sub_gvk = ("policy", "v1", sub_kind) if sub == "eviction" else (r.group, r.version, sub_kind)
        sub_def = by_gvk()[sub_gvk]
        ops.append(
            op(
                path,
                "post",
                f"create{infix}{suffix}",
                "post",
                named + _WRITE,
                body=sub_def,
                response=sub_def,
                gvk=sub_gvk,
            )
        )
    return ops


def _create_only(r: res.ResourceType) -> Operation:
    """The one operation of a review resource (TokenReview, SubjectAccessReview): POST to the
    collection, answered with the same kind."""
    gvk = (r.group, r.version, r.kind)
    kind_def = by_gvk()[gvk]
    path = f"/{gv_path(r.group, r.version)}/{r.plural}"
    op_id = f"create{_camel_group(r.group, r.version)}{r.kind}"
    tag = _tag(r.group, r.version)
    return Operation(path, "post", op_id, "post", gvk, tag, _WRITE, body=kind_def, response=kind_def)


@functools.cache
def operations() -> tuple[Operation, ...]:
    """Every served operation, ordered by path as upstream publishes them."""
    ops = [o for r in res.RESOURCES for o in _resource_operations(r)]
    return tuple(sorted(ops, key=lambda o: o.path))
