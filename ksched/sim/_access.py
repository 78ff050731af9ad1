"""Authentication and authorization of the embedded cluster's requests, as kube-apiserver's filters.

:class:`Access` exists in both modes, because TokenReview and SubjectAccessReview are served in
both (tokens from the same store, RBAC evaluated the same way). Only a secure cluster calls
:meth:`Access.guard` on every request: authenticate (:mod:`ksched.sim._authn`), apply
``Impersonate-*`` headers when the caller may impersonate, describe the request
(:mod:`ksched.sim._requestinfo`) and authorize it (:mod:`ksched.sim._rbac`). A plain cluster never
calls it, so plain serving does no per-request auth work.

Failures answer as kube-apiserver (``--anonymous-auth=true``, its default) does: 401
``Unauthorized`` for bad credentials, 403 ``Forbidden`` with upstream's message for a denial,
anonymous requests included (``User "system:anonymous" cannot ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from aiohttp import web

from ksched.sim import _status as st
from ksched.sim._authn import (
    ANONYMOUS,
    AUTHENTICATED,
    UNAUTHENTICATED,
    Authenticator,
    RequestHeaderConfig,
    TokenStore,
    Unauthorized,
)
from ksched.sim._rbac import Attributes, RbacAuthorizer, UserInfo, forbidden_message
from ksched.sim._requestinfo import request_attributes
from ksched.sim._web import error_response
from ksched.sim.store import Store

CURRENT_USER: ContextVar[UserInfo | None] = ContextVar("ksched_sim_user", default=None)
"""Where :meth:`Access.guard` leaves the authenticated user: aiohttp serves each request in its own
task, so this is per request and visible to every handler the request reaches."""
CLUSTER_CA_NAME = "ksched-sim-ca"
FRONT_PROXY_CA_NAME = "ksched-sim-front-proxy-ca"


def unauthorized() -> web.Response:
    return error_response(st.StatusError(401, "Unauthorized", reason="Unauthorized"))


def forbidden(attrs: Attributes, reason: str = "") -> st.StatusError:
    """403 as upstream's ``responsewriters.Forbidden`` builds it."""
    msg = forbidden_message(attrs)
    if reason:
        msg = f"{msg}: {reason}"
    details: dict[str, Any] = {}
    if not attrs.resource_request:
        return st.StatusError(403, f"forbidden: {msg}", reason="Forbidden", details=details)
    qualified = st.qualified(attrs.resource, attrs.api_group)
    if attrs.name:
        details["name"] = attrs.name
        text = f'{qualified} "{attrs.name}" is forbidden: {msg}'
    else:
        text = f"{qualified} is forbidden: {msg}"
    if attrs.api_group:
        details["group"] = attrs.api_group
    details["kind"] = attrs.resource
    return st.StatusError(403, text, reason="Forbidden", details=details)


class Access:
    """Tokens, the authenticator and the RBAC authorizer of one cluster."""

    def __init__(self, store: Store, *, secure: bool) -> None:
        self.secure = secure
        self.tokens = TokenStore()
        self.request_header = RequestHeaderConfig()
        self.authenticator = Authenticator(
            self.tokens,
            client_ca_name=CLUSTER_CA_NAME,
            front_proxy_ca_name=FRONT_PROXY_CA_NAME,
            request_header=self.request_header,
        )
        self.authorizer = RbacAuthorizer(store)

    def authorize(self, attrs: Attributes) -> tuple[bool, str]:
        return self.authorizer.authorize(attrs)

    def requester(self, request: web.BaseRequest) -> UserInfo:
        """Who sent ``request``: what :meth:`guard` found, or (plain mode) its token's user."""
        user = CURRENT_USER.get()
        if user is not None:
            return user
        try:
            return self.authenticator.authenticate(None, request.headers)
        except Unauthorized:
            return ANONYMOUS

    def guard(self, request: web.BaseRequest) -> web.Response | None:
        """``None`` when the request may go on (its user stored in :data:`CURRENT_USER`), else the
        401/403 response to send."""
        transport = request.transport
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        try:
            user = self.authenticator.authenticate(peercert, request.headers)
        except Unauthorized:
            return unauthorized()
        try:
            if any(h[:12].lower() == "impersonate-" for h in request.headers):
                user = self._impersonate(user, request.headers)
        except st.StatusError as exc:
            return error_response(exc)
        attrs = request_attributes(user, request.method, request.path, request.query)
        allowed, reason = self.authorizer.authorize(attrs)
        if allowed:
            CURRENT_USER.set(user)
            return None
        return error_response(forbidden(attrs, reason))

    def _may(
        self, user: UserInfo, resource: str, name: str, group: str = "", namespace: str = "", sub: str = ""
    ) -> None:
        attrs = Attributes(user, "impersonate", True, group, resource, sub, namespace, name)
        allowed, reason = self.authorizer.authorize(attrs)
        if not allowed:
            raise forbidden(attrs, reason)

    def _impersonate(self, user: UserInfo, headers: Mapping[str, str]) -> UserInfo:
        """The user ``Impersonate-*`` headers name, after checking ``user`` may impersonate each
        part of it (upstream's impersonation filter; 403 naming the first part refused)."""
        getall = getattr(headers, "getall", None)
        name = headers.get("Impersonate-User", "")
        if not name:
            raise st.bad_request(
                "requested impersonation (Impersonate-Group, -Uid or -Extra-*) without impersonating a user"
            )
        if name.startswith("system:serviceaccount:") and name.count(":") == 3:
            _, _, ns, sa = name.split(":")
            self._may(user, "serviceaccounts", sa, namespace=ns)
        else:
            self._may(user, "users", name)
        groups = list(getall("Impersonate-Group", [])) if getall is not None else []
        for g in groups:
            self._may(user, "groups", g)
        uid = headers.get("Impersonate-Uid", "")
        if uid:
            self._may(user, "uids", uid, "authentication.k8s.io")
        extra: dict[str, list[str]] = {}
        for key in dict.fromkeys(h.lower() for h in headers):  # a repeated header once
            if key.startswith("impersonate-extra-"):
                k = key[len("impersonate-extra-") :].lower()
                for v in getall(key, []) if getall is not None else [headers[key]]:
                    self._may(user, "userextras", v, "authentication.k8s.io", sub=k)
                    extra.setdefault(k, []).append(v)
        marker = UNAUTHENTICATED if name == ANONYMOUS.name else AUTHENTICATED
        if marker not in groups:
            groups.append(marker)
        return UserInfo(name, uid, tuple(groups), tuple((k, tuple(v)) for k, v in sorted(extra.items())))
