"""The authentication and authorization filters of the secure port, as one aiohttp middleware.

Upstream's chain (cmd/kube-scheduler/app/server.go buildHandlerChain): authenticate, then
authorize, then the handler. Failures answer a ``Status`` object in JSON, as upstream's
responsewriters: 401 ``Unauthorized``; 403 ``forbidden: User "<name>" cannot <verb> path
"<path>"`` (plus ``: <reason>`` when the authorizer gave one); 500 when a review failed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from ksched.server.authn import AuthenticationFailed, Credentials, UnionAuthenticator
from ksched.server.authz import Attributes, Decision, UnionAuthorizer

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> bytes:
    """A metav1.Status as upstream's apierrors encode it."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return orjson.dumps(body)


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> web.Response:
    return web.Response(
        status=code,
        body=status_body(code, reason, message, details),
        headers={"Content-Type": "application/json", "X-Content-Type-Options": "nosniff"},
    )


def forbidden_message(attrs: Attributes, reason: str) -> str:
    """Upstream's responsewriters.Forbidden text for a non-resource request."""
    message = f'User "{attrs.user.name}" cannot {attrs.verb} path "{attrs.path}"'
    if reason:
        message = f"{message}: {reason}"
    return f"forbidden: {message}"


def _peer_cert(request: web.Request) -> bytes | None:
    ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return bytes(der) if der else None


def auth_middleware(authn: UnionAuthenticator, authz: UnionAuthorizer) -> Any:
    """The middleware: 401/403/500 as upstream, else the handler."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        creds = Credentials(request.headers, _peer_cert(request))
        try:
            user = await authn.authenticate(creds)
        except AuthenticationFailed as exc:
            log.debug("unable to authenticate %s %s: %s", request.method, request.path, exc)
            user = None
        if user is None:
            return _status(401, "Unauthorized", "Unauthorized")
        attrs = Attributes(user, request.method.lower(), request.path)
        verdict = await authz.authorize(attrs)
        if verdict.decision is Decision.ALLOW:
            return await handler(request)
        if verdict.error:
            return web.Response(
                status=500,
                text=f"Internal Server Error: {orjson.dumps(request.path_qs).decode()}: {verdict.error}\n",
            )
        return _status(403, "Forbidden", forbidden_message(attrs, verdict.reason), {})

    return middleware
