"""Delegated authentication of the secure port, in upstream's order (DelegatingAuthenticatorConfig):

1. request header (front proxy): a client certificate verified by the request-header CA whose
   common name is an allowed name (any name when none are listed) vouches for the user named in
   the ``X-Remote-User``-style headers, with groups, uid and extras from their headers;
2. x509: a client certificate verified by the client CA is the user named by its common name,
   with its organizations as groups;
3. bearer token: ``Authorization: Bearer <token>`` checked by a TokenReview at the API server,
   the answers cached (:class:`TokenCache`);
4. anonymous: a request that presents none of these is ``system:anonymous`` in
   ``system:unauthenticated``.

The first that recognizes the request wins; one that fails (a certificate the CA did not sign,
a token the API server rejects) fails the request with 401 unless a later one recognizes it,
and anonymous applies only to requests that presented no credentials at all, as upstream's union
with FailOnError. Every authenticated user but the anonymous one also gets
``system:authenticated``.

The TLS handshake already checked that a client certificate chains to one of the trusted CAs
(:mod:`ksched.server.tls`); here each CA bundle is checked on its own, so the request-header CA
and the client CA keep their separate meanings. Only certificates issued directly by a CA of the
bundle are recognized (no intermediates).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import unquote

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ANONYMOUS_USER = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
AUTHENTICATED_GROUP = "system:authenticated"
MAX_CACHED_TOKENS = 4096


class AuthenticationFailed(Exception):
    """A request presented credentials that are not valid; it gets 401."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who a request is (upstream's user.Info)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request presents: its headers and the DER client certificate, if any."""

    headers: Mapping[str, str]
    """Case-insensitive (a CIMultiDict); ``getall`` is used when present."""
    peer_cert: bytes | None = None


class Authenticator(Protocol):
    async def __call__(self, creds: Credentials) -> UserInfo | None:
        """The user, ``None`` when the request does not carry this kind of credential; raises
        :class:`AuthenticationFailed` when it does and they are not valid."""


def _cas(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem) if pem.strip() else []


def verified_leaf(der: bytes, ca_pem: bytes, *, now: dt.datetime | None = None) -> x509.Certificate:
    """The client certificate if one CA of ``ca_pem`` issued it, it is valid now and usable for
    client authentication; else :class:`AuthenticationFailed` naming why."""
    leaf = x509.load_der_x509_certificate(der)
    when = now or dt.datetime.now(dt.UTC)
    if not leaf.not_valid_before_utc <= when <= leaf.not_valid_after_utc:
        raise AuthenticationFailed(
            f"x509: certificate {leaf.subject.rfc4514_string()} has expired or is not yet valid"
        )
    try:
        usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        if (
            ExtendedKeyUsageOID.CLIENT_AUTH not in usages
            and ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in usages
        ):
            raise AuthenticationFailed("x509: certificate specifies an incompatible key usage")
    except x509.ExtensionNotFound:
        pass
    for ca in _cas(ca_pem):
        if ca.subject != leaf.issuer:
            continue
        try:
            leaf.verify_directly_issued_by(ca)
        except (ValueError, TypeError, x509.InvalidSignature):
            continue
        return leaf
    raise AuthenticationFailed(
        f"x509: certificate {leaf.subject.rfc4514_string()} signed by unknown authority"
    )


def _common_name(cert: x509.Certificate) -> str:
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(cns[0].value) if cns else ""


@dataclass(frozen=True, slots=True)
class RequestHeaderConfig:
    """The front proxy's settings (flags or the extension-apiserver-authentication ConfigMap)."""

    client_ca: bytes = b""
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ("x-remote-user",)
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ("x-remote-group",)
    extra_prefixes: tuple[str, ...] = ("x-remote-extra-",)


def _all(headers: Mapping[str, str], name: str) -> list[str]:
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return list(getall(name, []))
    value = headers.get(name)
    return [value] if value is not None else []


def _first(headers: Mapping[str, str], names: Sequence[str]) -> str:
    for name in names:
        for value in _all(headers, name):
            if value:
                return value
    return ""


def header_user(headers: Mapping[str, str], cfg: RequestHeaderConfig) -> UserInfo | None:
    """The user the front proxy named (upstream's requestheader.NewRequestHeaderAuthenticator)."""
    name = _first(headers, cfg.username_headers)
    if not name:
        return None
    groups = [g for h in cfg.group_headers for g in _all(headers, h)]
    extra: dict[str, list[str]] = {}
    for key in headers:
        lowered = key.lower()
        for prefix in cfg.extra_prefixes:
            if lowered.startswith(prefix.lower()):
                # Extra keys are lower-cased and percent-decoded, as upstream's unescapeExtraKey.
                extra_key = unquote(lowered[len(prefix) :])
                extra.setdefault(extra_key, []).extend(_all(headers, key))
                break
    return UserInfo(
        name=name,
        uid=_first(headers, cfg.uid_headers),
        groups=tuple(groups),
        extra={k: tuple(dict.fromkeys(v)) for k, v in extra.items()},
    )


class RequestHeaderAuthenticator:
    """Step 1; ``config`` gives the current settings (they are reloaded)."""

    def __init__(self, config: Callable[[], RequestHeaderConfig | None]) -> None:
        self._config = config

    async def __call__(self, creds: Credentials) -> UserInfo | None:
        cfg = self._config()
        if cfg is None or not cfg.client_ca or creds.peer_cert is None:
            return None
        leaf = verified_leaf(creds.peer_cert, cfg.client_ca)
        cn = _common_name(leaf)
        if cfg.allowed_names and cn not in cfg.allowed_names:
            raise AuthenticationFailed(
                f"x509: subject with cn={cn} is not in the allowed list: {list(cfg.allowed_names)}"
            )
        return header_user(creds.headers, cfg)


class X509Authenticator:
    """Step 2; ``client_ca`` gives the current bundle (reloaded)."""

    def __init__(self, client_ca: Callable[[], bytes]) -> None:
        self._client_ca = client_ca

    async def __call__(self, creds: Credentials) -> UserInfo | None:
        ca = self._client_ca()
        if not ca or creds.peer_cert is None:
            return None
        leaf = verified_leaf(creds.peer_cert, ca)
        cn = _common_name(leaf)
        if not cn:
            return None
        orgs = leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
        return UserInfo(name=cn, groups=tuple(str(o.value) for o in orgs))


TokenReview = Callable[[str], Awaitable[tuple[UserInfo | None, str]]]
"""Ask the API server about a token: (the user or None, the review's error text)."""


@dataclass(slots=True)
class _Entry:
    user: UserInfo | None
    expires: float


class TokenCache:
    """Upstream's cached token authenticator: a verdict is reused for its TTL (successes for
    ``success_ttl_s``, rejections for ``failure_ttl_s``); a review that failed (no answer, or a
    rejection with an error text) is not cached, so the next request asks again."""

    def __init__(
        self,
        review: TokenReview,
        *,
        success_ttl_s: float,
        failure_ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review = review
        self._success_ttl = success_ttl_s
        self._failure_ttl = failure_ttl_s
        self._clock = clock
        self._entries: dict[bytes, _Entry] = {}

    async def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, ``None`` when the API server rejects it; raises on a failed review."""
        key = hashlib.sha256(token.encode()).digest()
        now = self._clock()
        hit = self._entries.get(key)
        if hit is not None and hit.expires > now:
            return hit.user
        user, error = await self._review(token)
        if user is None and error:
            raise AuthenticationFailed(error)
        ttl = self._success_ttl if user is not None else self._failure_ttl
        if ttl > 0:
            if len(self._entries) >= MAX_CACHED_TOKENS:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = _Entry(user, now + ttl)
        return user


class BearerTokenAuthenticator:
    """Step 3 (upstream's bearertoken): only ``Authorization: Bearer <token>`` counts."""

    def __init__(self, cache: TokenCache) -> None:
        self._cache = cache

    async def __call__(self, creds: Credentials) -> UserInfo | None:
        auth = creds.headers.get("Authorization", "").strip()
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer":
            return None
        token = token.strip()
        if not token:
            return None
        user = await self._cache.authenticate(token)
        if user is None:
            raise AuthenticationFailed("invalid bearer token")
        return user


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """Upstream's AuthenticatedGroupAdder: every user but the anonymous one is authenticated."""
    if (
        user.name == ANONYMOUS_USER
        or AUTHENTICATED_GROUP in user.groups
        or UNAUTHENTICATED_GROUP in user.groups
    ):
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)


class UnionAuthenticator:
    """Steps 1-3 in order, then anonymous when allowed and nothing failed."""

    def __init__(self, authenticators: Sequence[Authenticator], *, anonymous: bool) -> None:
        self._authenticators = tuple(authenticators)
        self._anonymous = anonymous

    async def authenticate(self, creds: Credentials) -> UserInfo | None:
        """The user, or ``None`` (answer 401); raises :class:`AuthenticationFailed` (also 401)."""
        errors: list[str] = []
        for authenticator in self._authenticators:
            try:
                user = await authenticator(creds)
            except AuthenticationFailed as exc:
                errors.append(str(exc))
                continue
            except Exception as exc:  # an unparsable certificate, a TokenReview that got no answer
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if user is not None:
                return with_authenticated_group(user)
        if errors:
            raise AuthenticationFailed("; ".join(errors))
        if self._anonymous:
            return UserInfo(ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))
        return None
