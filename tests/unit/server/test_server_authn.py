"""Request-header (front proxy), x509 and the union's order, with certificates made by ``cryptography``.

Cases follow upstream's requestheader and x509 tests: the first username header that is set wins,
groups and extras collect every value, extra keys are lower-cased and percent-decoded; a front-proxy
certificate whose CN is not allowed fails; a client CA certificate is CN -> user, O -> groups."""

from __future__ import annotations

import asyncio

import pytest
from multidict import CIMultiDict

from ksched.server.authn import (
    AuthenticationFailed,
    BearerTokenAuthenticator,
    Credentials,
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    TokenCache,
    UnionAuthenticator,
    UserInfo,
    X509Authenticator,
    header_user,
    verified_leaf,
)
from tests.unit.server.pki import CA

CFG = RequestHeaderConfig(
    username_headers=("X-Remote-User", "X-Other-User"),
    group_headers=("X-Remote-Group",),
    extra_prefixes=("X-Remote-Extra-", "X-Other-Extra-"),
    uid_headers=("X-Remote-Uid",),
)


def _h(*pairs: tuple[str, str]) -> CIMultiDict[str]:
    return CIMultiDict(pairs)


HEADER_CASES = [
    ("no user", _h(), None),
    ("empty user", _h(("X-Remote-User", "")), None),
    ("user", _h(("X-Remote-User", "alice")), UserInfo("alice")),
    ("second header", _h(("X-Remote-User", ""), ("X-Other-User", "bob")), UserInfo("bob")),
    ("first wins", _h(("X-Other-User", "bob"), ("X-Remote-User", "alice")), UserInfo("alice")),
    (
        "groups",
        _h(("X-Remote-User", "a"), ("X-Remote-Group", "one"), ("x-remote-group", "two")),
        UserInfo("a", groups=("one", "two")),
    ),
    (
        "extras",
        _h(
            ("X-Remote-User", "a"),
            ("X-Remote-Extra-Scopes", "s1"),
            ("X-Remote-Extra-scopes", "s2"),
            ("X-Other-Extra-Key%2fWith%20Escapes", "v"),
        ),
        UserInfo("a", extra={"scopes": ("s1", "s2"), "key/with escapes": ("v",)}),
    ),
    ("uid", _h(("X-Remote-User", "a"), ("X-Remote-Uid", "u-1")), UserInfo("a", uid="u-1")),
]


@pytest.mark.parametrize(("name", "headers", "want"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES])
def test_header_user(name: str, headers: CIMultiDict[str], want: UserInfo | None) -> None:
    assert header_user(headers, CFG) == want


def test_front_proxy_certificate() -> None:
    proxy_ca, other_ca = CA("front-proxy-ca"), CA("other")
    cfg = RequestHeaderConfig(client_ca=proxy_ca.pem, allowed_names=("front-proxy-client",))
    auth = RequestHeaderAuthenticator(lambda: cfg)
    headers = _h(("X-Remote-User", "alice"), ("X-Remote-Group", "dev"))
    good = proxy_ca.issue("front-proxy-client")
    assert asyncio.run(auth(Credentials(headers, good.der))) == UserInfo("alice", groups=("dev",))
    with pytest.raises(AuthenticationFailed, match="not in the allowed list"):
        asyncio.run(auth(Credentials(headers, proxy_ca.issue("someone-else").der)))
    with pytest.raises(AuthenticationFailed, match="unknown authority"):
        asyncio.run(auth(Credentials(headers, other_ca.issue("front-proxy-client").der)))
    assert asyncio.run(auth(Credentials(headers, None))) is None, "headers alone prove nothing"
    anyone = RequestHeaderAuthenticator(lambda: RequestHeaderConfig(client_ca=proxy_ca.pem))
    assert asyncio.run(anyone(Credentials(headers, proxy_ca.issue("any-name").der))) is not None


def test_client_certificate() -> None:
    ca = CA("client-ca")
    auth = X509Authenticator(lambda: ca.pem)
    user = asyncio.run(auth(Credentials({}, ca.issue("bob", ("ops", "dev")).der)))
    assert user == UserInfo("bob", groups=("ops", "dev"))
    with pytest.raises(AuthenticationFailed, match="expired"):
        asyncio.run(auth(Credentials({}, ca.issue("bob", expired=True).der)))
    with pytest.raises(AuthenticationFailed, match="key usage"):
        asyncio.run(auth(Credentials({}, ca.issue("bob", server=True).der)))
    assert asyncio.run(X509Authenticator(lambda: b"")(Credentials({}, ca.issue("bob").der))) is None


def test_verified_leaf_picks_the_issuing_ca_of_a_bundle() -> None:
    first, second = CA("first"), CA("second")
    leaf = second.issue("carol")
    assert verified_leaf(leaf.der, first.pem + second.pem).subject == leaf.cert.subject


def _union(anonymous: bool, ca: CA) -> UnionAuthenticator:
    proxy = RequestHeaderAuthenticator(lambda: None)
    return UnionAuthenticator([proxy, X509Authenticator(lambda: ca.pem)], anonymous=anonymous)


def test_union_order_anonymous_and_failures() -> None:
    ca, stranger = CA("client-ca"), CA("stranger")
    union = _union(True, ca)
    anon = asyncio.run(union.authenticate(Credentials({})))
    assert anon == UserInfo("system:anonymous", groups=("system:unauthenticated",))
    user = asyncio.run(union.authenticate(Credentials({}, ca.issue("dave").der)))
    assert user == UserInfo("dave", groups=("system:authenticated",))
    with pytest.raises(AuthenticationFailed):
        asyncio.run(union.authenticate(Credentials({}, stranger.issue("dave").der)))
    assert asyncio.run(_union(False, ca).authenticate(Credentials({}))) is None


def test_a_token_review_without_an_answer_fails_the_request() -> None:
    async def review(_: str) -> tuple[UserInfo | None, str]:
        raise ConnectionError("connection refused")

    bearer = BearerTokenAuthenticator(TokenCache(review, success_ttl_s=10, failure_ttl_s=10))
    union = UnionAuthenticator([bearer], anonymous=True)
    with pytest.raises(AuthenticationFailed, match="connection refused"):
        asyncio.run(union.authenticate(Credentials({"Authorization": "Bearer t"})))
