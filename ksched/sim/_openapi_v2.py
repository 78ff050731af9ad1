"""``GET /openapi/v2``: the Swagger 2.0 document kubectl validates against.

kubectl validates on the client what the server cannot validate for it: every ``kind: List`` (the
output of ``kubectl get a,b -o yaml``), and every object of a kind whose PATCH operation does not
declare ``fieldValidation``. It reads this document for that, as protobuf only
(:mod:`ksched.sim._openapi_pb`). The definitions are upstream's (:mod:`ksched.sim._openapi`), so
kubectl reports a misspelt or misplaced field as it does against kube-apiserver.

Like kube-apiserver, the handler answers protobuf when asked for it, JSON when asked for JSON or
anything, and 406 Not Acceptable otherwise; both bodies are built on the first request and kept,
with an ETag.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import orjson
from aiohttp import web

from ksched.sim import _openapi as oa
from ksched.sim import _status as st
from ksched.sim._openapi_pb import document

PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""The content type of the protobuf answer: kube-openapi's, which Go's MIME parser accepts."""
PROTOBUF_REQUESTED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
"""What client-go asks for: the older spelling, which kube-openapi still accepts."""
JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _parameter(p: oa.Param) -> dict[str, Any]:
    out: dict[str, Any] = {"name": p.name, "in": p.where, "type": p.type, "uniqueItems": True}
    if p.where == "path":
        out["required"] = True
    return out


def _operation(o: oa.Operation) -> dict[str, Any]:
    params = [_parameter(p) for p in o.params]
    if o.body:
        params.insert(0, {"name": "body", "in": "body", "required": o.body_required, "schema": _ref(o.body)})
    responses: dict[str, Any] = {"200": {"description": "OK", "schema": _ref(o.response)}}
    if o.method == "post":
        responses["201"] = {"description": "Created", "schema": _ref(o.response)}
    produces = [JSON, "application/json;stream=watch"] if o.action == "list" else [JSON]
    return {
        "tags": [o.tag],
        "operationId": o.operation_id,
        "consumes": list(oa.PATCH_TYPES) if o.method == "patch" else ["*/*"],
        "produces": produces,
        "parameters": params,
        "responses": responses,
        "x-kubernetes-action": o.action,
        "x-kubernetes-group-version-kind": dict(zip(("group", "version", "kind"), o.gvk, strict=True)),
    }


@functools.cache
def swagger() -> dict[str, Any]:
    """The whole document: every served operation and the definitions they use."""
    paths: dict[str, dict[str, Any]] = {}
    for o in oa.operations():
        paths.setdefault(o.path, {})[o.method] = _operation(o)
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"v{oa.kubernetes_version()}"},
        "paths": paths,
        "definitions": oa.definitions(),
    }


@functools.cache
def _bodies() -> dict[str, tuple[bytes, str]]:
    doc = swagger()
    out = {}
    for ctype, body in ((JSON, orjson.dumps(doc)), (PROTOBUF, document(doc))):
        out[ctype] = (body, '"' + hashlib.sha512(body).hexdigest().upper() + '"')
    return out


def _wanted(accept: str) -> str | None:
    """The content type to answer an ``Accept`` header with, or ``None`` (406)."""
    if not accept.strip():
        return JSON
    for item in accept.split(","):
        media = item.split(";")[0].strip().lower()
        if media in (PROTOBUF, PROTOBUF_REQUESTED):
            return PROTOBUF
        if media in (JSON, "application/*", "*/*"):
            return JSON
    return None


def response(accept: str) -> web.Response:
    """The answer to ``GET /openapi/v2`` with this ``Accept`` header."""
    ctype = _wanted(accept)
    if ctype is None:
        msg = f"/openapi/v2 is served as {JSON} or {PROTOBUF}, not as {accept!r}"
        raise st.StatusError(406, msg, reason="NotAcceptable")
    body, etag = _bodies()[ctype]
    return web.Response(body=body, headers={"Content-Type": ctype, "ETag": etag})
