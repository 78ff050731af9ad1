"""Where the secure port's authenticators and authorizers get their settings and API clients.

- The API clients (TokenReview, SubjectAccessReview, the ConfigMap) come from
  ``--authentication-kubeconfig``/``--authorization-kubeconfig``, else the in-cluster service
  account; with neither (kube-scheduler's RemoteKubeConfigFileOptional) tokens cannot be reviewed,
  every request is anonymous, and upstream's warnings are logged.
- These clients are given no write gate (:mod:`ksched.kube.fence`): a TokenReview or a
  SubjectAccessReview is a POST but changes nothing in the cluster, and a standby must still answer
  its scrapes and probes, so fencing them would make every standby's /metrics fail.
- The client CA and the request-header settings come from the flags, else from the ConfigMap
  kube-system/extension-apiserver-authentication (unless --authentication-skip-lookup). A lookup
  that fails is only logged with --authentication-tolerate-lookup-failure (kube-scheduler's
  default), else it stops the start. Files and the ConfigMap are read again every
  :data:`RELOAD_INTERVAL_S`, as upstream's dynamic CA controllers resync every minute.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ksched.errors import ApiError, InputError, NotFound
from ksched.kube.client import ApiClient
from ksched.kube.connection import Connection, KubeConfigError, incluster_connection, load_connection
from ksched.model.paths import CORE, object_path
from ksched.server.authn import RequestHeaderConfig, UserInfo
from ksched.server.options import AuthenticationOptions

log = logging.getLogger(__name__)

RELOAD_INTERVAL_S = 60.0
CONFIGMAP_NAMESPACE = "kube-system"
CONFIGMAP_NAME = "extension-apiserver-authentication"
CONFIGMAP_PATH = object_path(CORE, "configmaps", CONFIGMAP_NAME, CONFIGMAP_NAMESPACE)
READER_ROLE = "extension-apiserver-authentication-reader"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
AUTH_QPS, AUTH_BURST = 200.0, 400
"""Upstream's delegated clients: high limits, since they bound how fast the endpoint answers."""

ClientFactory = Callable[[Connection, str], ApiClient]
"""Make an ungated API client on the I/O loop for a connection and a User-Agent suffix."""


def delegated_connection(kubeconfig: str, flag: str) -> Connection | None:
    """The connection for --authentication-kubeconfig/--authorization-kubeconfig, else in-cluster,
    else None (upstream's getClient with RemoteKubeConfigFileOptional)."""
    if kubeconfig:
        try:
            return load_connection(kubeconfig)
        except KubeConfigError as exc:
            raise InputError(f"failed to get delegated {flag} kubeconfig: {exc}") from exc
    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    try:
        return incluster_connection()
    except KubeConfigError as exc:
        log.warning("failed to read in-cluster kubeconfig for delegated %s: %s", flag, exc)
        return None


def _user(raw: Any) -> UserInfo:
    raw = raw if isinstance(raw, dict) else {}
    extra = raw.get("extra") or {}
    return UserInfo(
        name=str(raw.get("username") or ""),
        uid=str(raw.get("uid") or ""),
        groups=tuple(str(g) for g in raw.get("groups") or ()),
        extra={str(k): tuple(str(x) for x in v or ()) for k, v in extra.items()},
    )


def token_reviewer(client: ApiClient) -> Callable[[str], Any]:
    """A TokenReview (authentication.k8s.io/v1) per token; (user, error text) as authn wants."""

    async def review(token: str) -> tuple[UserInfo | None, str]:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        answer = await client.post(TOKEN_REVIEWS, body, retry=True)
        status = answer.get("status") or {} if isinstance(answer, dict) else {}
        if status.get("authenticated"):
            return _user(status.get("user")), ""
        return None, str(status.get("error") or "")

    return review


def access_reviewer(client: ApiClient) -> Callable[[dict[str, object]], Any]:
    """A SubjectAccessReview (authorization.k8s.io/v1); returns its status."""

    async def review(body: dict[str, object]) -> dict[str, object]:
        answer = await client.post(ACCESS_REVIEWS, body, retry=True)
        status = answer.get("status") if isinstance(answer, dict) else None
        return status if isinstance(status, dict) else {}

    return review


def _strings(data: dict[str, str], key: str) -> tuple[str, ...]:
    """A ConfigMap value holding a JSON list of strings (upstream's deserializeStrings)."""
    text = data.get(key, "")
    if not text:
        return ()
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InputError(
            f"configmap/{CONFIGMAP_NAME} in {CONFIGMAP_NAMESPACE}: {key} is not a JSON list: {exc}"
        ) from exc
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(
            f"configmap/{CONFIGMAP_NAME} in {CONFIGMAP_NAMESPACE}: {key} must be a list of strings"
        )
    return tuple(value)


def request_header_from_configmap(data: dict[str, str]) -> RequestHeaderConfig | None:
    ca = data.get("requestheader-client-ca-file", "")
    if not ca:
        return None
    return RequestHeaderConfig(
        client_ca=ca.encode(),
        allowed_names=_strings(data, "requestheader-allowed-names"),
        username_headers=_strings(data, "requestheader-username-headers"),
        uid_headers=_strings(data, "requestheader-uid-headers"),
        group_headers=_strings(data, "requestheader-group-headers"),
        extra_prefixes=_strings(data, "requestheader-extra-headers-prefix"),
    )


def _read(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{flag}={path}: unable to load client CA file: {exc}") from exc


@dataclass(slots=True)
class AuthSources:
    """The current client CA bundle and request-header settings (read on the I/O loop)."""

    opts: AuthenticationOptions
    client: ApiClient | None
    client_ca: bytes = b""
    request_header: RequestHeaderConfig | None = None
    _warned: set[str] = field(default_factory=set)

    def all_cas(self) -> bytes:
        """Every CA a client certificate may chain to (for the TLS handshake)."""
        header = self.request_header.client_ca if self.request_header else b""
        return self.client_ca + (b"\n" if self.client_ca and header else b"") + header

    def _from_flags(self) -> None:
        o = self.opts
        if o.client_ca_file:
            self.client_ca = _read(o.client_ca_file, "--client-ca-file")
        if o.requestheader_client_ca_file:
            self.request_header = RequestHeaderConfig(
                client_ca=_read(o.requestheader_client_ca_file, "--requestheader-client-ca-file"),
                allowed_names=o.requestheader_allowed_names,
                username_headers=o.requestheader_username_headers,
                uid_headers=o.requestheader_uid_headers,
                group_headers=o.requestheader_group_headers,
                extra_prefixes=o.requestheader_extra_headers_prefix,
            )

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning(message)

    async def refresh(self) -> None:
        """Read the flags' files and, for what they leave missing, the ConfigMap."""
        self._from_flags()
        await self._lookup()

    async def _lookup(self) -> None:
        o = self.opts
        missing_ca, missing_header = not o.client_ca_file, not o.requestheader_client_ca_file
        if o.skip_lookup or not (missing_ca or missing_header):
            return
        where = f"configmap/{CONFIGMAP_NAME} in {CONFIGMAP_NAMESPACE}"
        if self.client is None:
            if missing_ca:
                self._warn_once(
                    f"No authentication-kubeconfig provided in order to lookup client-ca-file in {where}, "
                    "so client certificate authentication won't work."
                )
            if missing_header:
                self._warn_once(
                    "No authentication-kubeconfig provided in order to lookup requestheader-client-ca-file "
                    f"in {where}, so request-header client certificate authentication won't work."
                )
            return
        data = await self._configmap(where)
        if missing_ca:
            self.client_ca = data.get("client-ca-file", "").encode()
            if not self.client_ca:
                self._warn_once(
                    f"Cluster doesn't provide client-ca-file in {where}, so client certificate "
                    "authentication won't work."
                )
        if missing_header:
            self.request_header = request_header_from_configmap(data)
            if self.request_header is None:
                self._warn_once(
                    f"Cluster doesn't provide requestheader-client-ca-file in {where}, so request-header "
                    "client certificate authentication won't work."
                )

    async def _configmap(self, where: str) -> dict[str, str]:
        assert self.client is not None
        try:
            obj = await self.client.get(CONFIGMAP_PATH)
        except NotFound:
            return {}
        except ApiError as exc:
            if exc.status == 403:
                log.warning(
                    "Unable to get %s. Usually fixed by 'kubectl create rolebinding -n %s ROLE_NAME "
                    "--role=%s --serviceaccount=YOUR_NS:YOUR_SA'",
                    where,
                    CONFIGMAP_NAMESPACE,
                    READER_ROLE,
                )
            raise
        data = obj.get("data") if isinstance(obj, dict) else None
        return {str(k): str(v) for k, v in (data or {}).items()}

    async def initial(self) -> None:
        """The first read: unreadable flag files fail; a failed lookup is handled as upstream's
        --authentication-tolerate-lookup-failure says."""
        self._from_flags()
        try:
            await self._lookup()
        except (ApiError, InputError) as exc:
            if not self.opts.tolerate_lookup_failure:
                raise InputError(f"unable to look up in-cluster authentication configuration: {exc}") from exc
            log.warning("Error looking up in-cluster authentication configuration: %s", exc)
            log.warning(
                "Continuing without authentication configuration. This may treat all requests as anonymous."
            )
            log.warning(
                "To require authentication configuration lookup to succeed, set "
                "--authentication-tolerate-lookup-failure=false"
            )
