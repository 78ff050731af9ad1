"""``GET /openapi/v3`` and ``/openapi/v3/<group-version>``: the OpenAPI 3.0 documents, one per served
group/version, with the same operations and upstream definitions as ``/openapi/v2``.

kubectl reads these first: the PATCH operations' ``fieldValidation`` parameter tells ``create`` and
``apply`` to leave field validation to the server, and ``x-kubernetes-group-version-kind`` with
the ``application/strategic-merge-patch+json`` request body tells ``apply`` to compute strategic
merge patches from the schemas here (``x-kubernetes-patch-strategy``, ``-merge-key``); ``kubectl
explain`` renders them. The definitions are converted as kube-apiserver converts its own: references
point at ``#/components/schemas/`` and a reference with siblings (a field's description) becomes
``allOf: [{$ref}]``. Each document is built on first use and kept, and the discovery document links
it with the SHA-512 of its body as ``hash``, so a client's cache follows the content.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import orjson

from ksched.sim import _openapi as oa
from ksched.sim import _resources as res


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _schema(node: Any) -> Any:
    """A Swagger 2.0 schema node as OpenAPI 3.0."""
    if isinstance(node, list):
        return [_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("required", "enum") or k.startswith("x-") else _schema(v)) for k, v in node.items()}
    if "properties" in node:
        out["properties"] = {k: _schema(v) for k, v in node["properties"].items()}
    ref = out.pop("$ref", None)
    if ref is None:
        return out
    target = _ref(ref.removeprefix("#/definitions/"))
    return {"allOf": [target], **out} if out else target


def _parameter(p: oa.Param) -> dict[str, Any]:
    out: dict[str, Any] = {"name": p.name, "in": p.where, "schema": {"type": p.type, "uniqueItems": True}}
    if p.where == "path":
        out["required"] = True
    return out


def _operation(o: oa.Operation) -> dict[str, Any]:
    op: dict[str, Any] = {
        "tags": [o.tag],
        "operationId": o.operation_id,
        "parameters": [_parameter(p) for p in o.params],
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": _ref(o.response)}}}
        },
        "x-kubernetes-action": o.action,
        "x-kubernetes-group-version-kind": dict(zip(("group", "version", "kind"), o.gvk, strict=True)),
    }
    if o.body:
        types = oa.PATCH_TYPES if o.method == "patch" else ("*/*",)
        content = {t: {"schema": _ref(o.body)} for t in types}
        op["requestBody"] = {"content": content, "required": o.body_required}
    return op


def group_versions() -> list[str]:
    """The served group/versions as discovery paths (``api/v1``, ``apis/apps/v1``)."""
    return sorted({oa.gv_path(r.group, r.version) for r in res.RESOURCES})


@functools.cache
def document(gv: str) -> bytes | None:
    """The JSON document of one group/version (``api/v1``), or ``None`` if it is not served."""
    if gv not in group_versions():
        return None
    prefix = f"/{gv}/"
    ops = [o for o in oa.operations() if o.path.startswith(prefix)]
    paths: dict[str, dict[str, Any]] = {}
    for o in ops:
        paths.setdefault(o.path, {})[o.method] = _operation(o)
    used = oa.referenced({o.response for o in ops} | {o.body for o in ops if o.body})
    defs = oa.definitions()
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{oa.kubernetes_version()}"},
        "paths": paths,
        "components": {"schemas": {name: _schema(defs[name]) for name in sorted(used)}},
    }
    return orjson.dumps(doc)


@functools.cache
def discovery() -> dict[str, Any]:
    """``GET /openapi/v3``: each group/version's document, linked by the hash of its content."""
    paths = {}
    for gv in group_versions():
        body = document(gv)
        assert body is not None
        digest = hashlib.sha512(body).hexdigest().upper()
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}
