"""Who sent a request: kube-apiserver's authenticators, in its order.

1. **Request header** (front proxy): a client certificate signed by the front-proxy CA whose
   CommonName is an allowed name may say who the user is in ``X-Remote-User`` (groups in every
   ``X-Remote-Group``, uid in ``X-Remote-Uid``, extras in ``X-Remote-Extra-<key>``).
2. **Client certificate** signed by the cluster CA: the user is the CommonName, the groups the
   Organization entries.
3. **Bearer token** from the static token store (kube-apiserver's ``--token-auth-file``); an
   unknown token is 401, never anonymous.
4. **Anonymous**: ``system:anonymous`` in ``system:unauthenticated``.

Every authenticated (not anonymous) user also gets ``system:authenticated``, as upstream's
group adder does. The TLS layer has already verified any client certificate against both CAs; here
only its issuer decides which of the two authenticators it speaks to.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ksched.errors import InputError, ManifestError
from ksched.sim._rbac import UserInfo

ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"


class Unauthorized(Exception):
    """Credentials were presented and are not valid (401)."""


@dataclass(frozen=True, slots=True)
class RequestHeaderConfig:
    """kube-apiserver's ``--requestheader-*`` flags, as kubeadm sets them."""

    allowed_names: tuple[str, ...] = ("front-proxy-client",)
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    uid_headers: tuple[str, ...] = ("X-Remote-Uid",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_headers_prefix: tuple[str, ...] = ("X-Remote-Extra-",)


class TokenStore:
    """Static bearer tokens: token -> user (kube-apiserver's token file authenticator)."""

    def __init__(self) -> None:
        self._tokens: dict[str, UserInfo] = {}

    def add(self, token: str, user: str, groups: tuple[str, ...] | list[str] = (), uid: str = "") -> None:
        if not token or not user:
            raise InputError(f"a static token needs a token and a user name (got user {user!r})")
        self._tokens[token] = UserInfo(user, uid, tuple(groups))

    def lookup(self, token: str) -> UserInfo | None:
        return self._tokens.get(token)

    def load_csv(self, path: Path) -> int:
        """Read ``token,user,uid[,"group1,group2"]`` lines; returns how many tokens were added."""
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise ManifestError(f"token auth file {str(path)!r}: cannot read it: {exc}") from exc
        return self.load_text(text, str(path))

    def load_text(self, text: str, source: str = "<text>") -> int:
        n = 0
        for lineno, record in enumerate(csv.reader(io.StringIO(text), skipinitialspace=True), 1):
            if not record or (len(record) == 1 and not record[0].strip()):
                continue
            if len(record) < 3:
                raise ManifestError(
                    f"token auth file {source!r} line {lineno}: must have at least 3 columns (token, user "
                    f"name, user uid), found {len(record)}"
                )
            token, user, uid = record[0], record[1], record[2]
            groups = tuple(g.strip() for g in record[3].split(",") if g.strip()) if len(record) > 3 else ()
            if token:
                self.add(token, user, groups, uid)
                n += 1
        return n


def with_authenticated(user: UserInfo) -> UserInfo:
    """``user`` with ``system:authenticated`` added, unless anonymous or already marked."""
    if user.name == ANONYMOUS.name or AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)


def _rdn(name: Any, key: str) -> list[str]:
    """Values of one attribute in ssl.getpeercert()'s subject/issuer tuples."""
    return [v for rdn in name or () for k, v in rdn if k == key]


def _from_headers(headers: Mapping[str, str], cfg: RequestHeaderConfig) -> UserInfo | None:
    getall = getattr(headers, "getall", None)

    def values(name: str) -> list[str]:
        return list(getall(name, [])) if getall is not None else ([headers[name]] if name in headers else [])

    user = next((v for h in cfg.username_headers for v in values(h) if v), "")
    if not user:
        return None
    uid = next((v for h in cfg.uid_headers for v in values(h) if v), "")
    groups = tuple(v for h in cfg.group_headers for v in values(h))
    extra: dict[str, list[str]] = {}
    for key in dict.fromkeys(h.lower() for h in headers):  # a repeated header once
        for prefix in cfg.extra_headers_prefix:
            if key.startswith(prefix.lower()):
                extra.setdefault(unquote(key[len(prefix) :]).lower(), []).extend(values(key))
    return UserInfo(user, uid, groups, tuple((k, tuple(v)) for k, v in sorted(extra.items())))


class Authenticator:
    """Runs the authenticators of the module docstring for one request."""

    def __init__(
        self,
        tokens: TokenStore,
        *,
        client_ca_name: str,
        front_proxy_ca_name: str,
        request_header: RequestHeaderConfig,
    ) -> None:
        self.tokens = tokens
        self.client_ca_name = client_ca_name
        self.front_proxy_ca_name = front_proxy_ca_name
        self.request_header = request_header

    def authenticate(self, peercert: dict[str, Any] | None, headers: Mapping[str, str]) -> UserInfo:
        """The user (with ``system:authenticated``), ANONYMOUS, or Unauthorized."""
        if peercert:
            issuer = _rdn(peercert.get("issuer"), "commonName")
            subject = peercert.get("subject")
            cn = next(iter(_rdn(subject, "commonName")), "")
            if self.front_proxy_ca_name in issuer:
                user = _from_headers(headers, self.request_header)
                if user is not None:
                    allowed = self.request_header.allowed_names
                    if allowed and cn not in allowed:
                        raise Unauthorized(f"x509: subject with cn={cn} is not in the allowed list")
                    return with_authenticated(user)
            elif self.client_ca_name in issuer and cn:
                return with_authenticated(UserInfo(cn, groups=tuple(_rdn(subject, "organizationName"))))
        auth = headers.get("Authorization", "")
        if auth[:7].lower() == "bearer ":
            user = self.tokens.lookup(auth[7:].strip())
            if user is None:
                raise Unauthorized("invalid bearer token")
            return with_authenticated(user)
        return ANONYMOUS
