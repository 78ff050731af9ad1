"""Requests in, responses out: what every handler of the embedded API server shares.

:func:`parse_request` maps a Kubernetes API path to a :class:`Req`; :func:`read_json` reads a body
(bounded by :data:`MAX_BODY_BYTES`); :func:`json_response` and :func:`error_response` build the
replies. Handlers report failures by raising :class:`~ksched.sim._status.StatusError`, which the
server turns into a Status response with :func:`error_response`.

This module imports none of the handlers, so the server (:mod:`ksched.sim._http`) and the modules it
delegates to (admin endpoints, subresources, watches) all depend on it and not on each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from ksched.sim import _status as st
from ksched.sim._resources import BY_PATH, ResourceType

JSON = "application/json"
MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body accepted (aiohttp's default is 1 MiB)."""


@dataclass(slots=True)
class Req:
    """A parsed resource request."""

    verb: str
    rtype: ResourceType
    namespace: str | None
    name: str
    sub: str
    query: dict[str, str]

    @property
    def fault_resource(self) -> str:
        return f"{self.rtype.plural}/{self.sub}" if self.sub else self.rtype.plural


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return web.Response(body=raw, status=status, content_type=JSON, headers=headers)


def error_response(exc: st.StatusError) -> web.Response:
    return web.Response(body=exc.body(), status=exc.code, content_type=JSON, headers=exc.headers)


def parse_request(method: str, parts: list[str], query: dict[str, str]) -> Req | None:
    """Map ``/api/v1/...`` or ``/apis/G/V/...`` to a :class:`Req`; ``None`` if no such resource."""
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif parts and parts[0] == "apis" and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and (group, version, rest[2]) in BY_PATH:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rtype = BY_PATH.get((group, version, rest[0]))
    if rtype is None:
        return None
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and sub not in rtype.subresources:
        return None
    if rtype.namespaced and name and namespace is None:
        return None  # /api/v1/pods/NAME is not a path upstream serves
    if not rtype.namespaced and namespace is not None:
        return None
    if name:
        verb = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "POST": "create"}.get(
            method
        )
    else:
        watch = query.get("watch") in ("true", "1")
        verb = {"GET": "watch" if watch else "list", "POST": "create", "DELETE": "deletecollection"}.get(
            method
        )
    if verb is None:
        raise st.StatusError(
            405, "the server does not allow this method on the requested resource", reason="MethodNotAllowed"
        )
    return Req(verb, rtype, namespace, name, sub, query)


async def read_body(request: web.BaseRequest) -> bytes:
    """The request body. One that has fully arrived (every small one: a binding, a patch) is taken
    from the buffer at once, without ``request.read()``'s chunk loop and copies."""
    payload = request.content
    if payload.is_eof():
        raw = payload.read_nowait(-1)
        if len(raw) > MAX_BODY_BYTES:
            raise st.StatusError(413, "the request body is too large", reason="RequestEntityTooLarge")
        return raw
    return await request.read()


async def read_json(request: web.BaseRequest, *, required: bool = True) -> Any:
    raw = await read_body(request)
    if not raw.strip():
        if required:
            raise st.bad_request("the request body is empty; a JSON object is required")
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise st.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


def int_param(q: dict[str, str], key: str) -> int | None:
    """An integer query parameter; ``None`` when absent or empty, 400 when not an integer."""
    if key not in q or q[key] == "":
        return None
    try:
        return int(q[key])
    except ValueError:
        raise st.bad_request(f"{key}: Invalid value: {q[key]!r}: must be an integer") from None
