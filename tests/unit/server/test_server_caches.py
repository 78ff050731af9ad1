"""Cache TTLs of the token authenticator and the SubjectAccessReview authorizer, on a fake clock.

Upstream: token/cache (successes and rejections cached for --authentication-token-webhook-cache-ttl,
failed reviews not cached) and plugin/pkg/authorizer/webhook (allowed for the allow TTL, not
allowed for the deny TTL, failed reviews not cached)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ksched.server.authn import (
    AuthenticationFailed,
    BearerTokenAuthenticator,
    Credentials,
    TokenCache,
    UserInfo,
)
from ksched.server.authz import Attributes, Decision, ReviewAuthorizer, UnionAuthorizer, path_authorizer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Reviews:
    """A scripted API server: answers in order, counts calls."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0

    async def __call__(self, _: Any) -> Any:
        self.calls += 1
        answer = self.answers[min(self.calls, len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


ALICE = UserInfo("alice", groups=("dev",))


def _cache(reviews: Reviews, clock: Clock) -> TokenCache:
    return TokenCache(reviews, success_ttl_s=10, failure_ttl_s=10, clock=clock)


def test_success_is_cached_for_the_ttl() -> None:
    clock, reviews = Clock(), Reviews([(ALICE, "")])
    cache = _cache(reviews, clock)
    assert asyncio.run(cache.authenticate("t")) == ALICE
    clock.now += 9.9
    assert asyncio.run(cache.authenticate("t")) == ALICE
    assert reviews.calls == 1
    clock.now += 0.2
    asyncio.run(cache.authenticate("t"))
    assert reviews.calls == 2


def test_rejection_is_cached_too() -> None:
    clock, reviews = Clock(), Reviews([(None, "")])
    cache = _cache(reviews, clock)
    assert asyncio.run(cache.authenticate("bad")) is None
    clock.now += 5
    assert asyncio.run(cache.authenticate("bad")) is None
    assert reviews.calls == 1
    clock.now += 6
    asyncio.run(cache.authenticate("bad"))
    assert reviews.calls == 2


def test_failed_reviews_are_not_cached() -> None:
    clock, reviews = Clock(), Reviews([ConnectionError("down"), (None, "webhook said no"), (ALICE, "")])
    cache = _cache(reviews, clock)
    with pytest.raises(ConnectionError):
        asyncio.run(cache.authenticate("t"))
    with pytest.raises(AuthenticationFailed, match="webhook said no"):
        asyncio.run(cache.authenticate("t"))
    assert asyncio.run(cache.authenticate("t")) == ALICE
    assert reviews.calls == 3


def test_tokens_are_cached_apart() -> None:
    clock, reviews = Clock(), Reviews([(ALICE, ""), (None, "")])
    cache = _cache(reviews, clock)
    assert asyncio.run(cache.authenticate("a")) == ALICE
    assert asyncio.run(cache.authenticate("b")) is None


@pytest.mark.parametrize(
    ("header", "outcome"),
    [
        ("", None),
        ("Basic dXNlcjpwdw==", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("bearer good", "alice"),
        ("Bearer good", "alice"),
        ("Bearer nope", "invalid bearer token"),
    ],
)
def test_bearer_header(header: str, outcome: str | None) -> None:
    async def review(token: str) -> tuple[UserInfo | None, str]:
        return (ALICE, "") if token == "good" else (None, "")

    auth = BearerTokenAuthenticator(TokenCache(review, success_ttl_s=10, failure_ttl_s=10))
    creds = Credentials({"Authorization": header} if header else {})
    if outcome == "invalid bearer token":
        with pytest.raises(AuthenticationFailed, match=outcome):
            asyncio.run(auth(creds))
        return
    user = asyncio.run(auth(creds))
    assert (user.name if user else None) == outcome


GET_METRICS = Attributes(ALICE, "get", "/metrics")


def _review(reviews: Reviews, clock: Clock, allow_ttl: float = 10, deny_ttl: float = 10) -> ReviewAuthorizer:
    return ReviewAuthorizer(reviews, allow_ttl_s=allow_ttl, deny_ttl_s=deny_ttl, clock=clock)


def test_allowed_and_denied_ttls() -> None:
    clock, reviews = Clock(), Reviews([{"allowed": True}, {"allowed": False, "reason": "no"}])
    authorize = _review(reviews, clock, allow_ttl=10, deny_ttl=3)
    assert asyncio.run(authorize(GET_METRICS)).decision is Decision.ALLOW
    clock.now += 9
    assert asyncio.run(authorize(GET_METRICS)).decision is Decision.ALLOW
    clock.now += 2
    verdict = asyncio.run(authorize(GET_METRICS))
    assert (verdict.decision, verdict.reason) == (Decision.NO_OPINION, "no")
    clock.now += 2.9
    asyncio.run(authorize(GET_METRICS))
    assert reviews.calls == 2
    clock.now += 0.2
    asyncio.run(authorize(GET_METRICS))
    assert reviews.calls == 3


def test_explicit_deny_and_per_request_keys() -> None:
    clock, reviews = Clock(), Reviews([{"denied": True, "reason": "policy"}, {"allowed": True}])
    authorize = _review(reviews, clock)
    assert asyncio.run(authorize(GET_METRICS)).decision is Decision.DENY
    assert asyncio.run(authorize(Attributes(ALICE, "put", "/metrics"))).decision is Decision.ALLOW
    assert reviews.calls == 2


def test_a_failed_review_is_an_error_and_not_cached() -> None:
    clock, reviews = Clock(), Reviews([ConnectionError("refused"), {"allowed": True}])
    union = UnionAuthorizer([path_authorizer(["/healthz"]), _review(reviews, clock)])
    verdict = asyncio.run(union.authorize(GET_METRICS))
    assert verdict.decision is Decision.NO_OPINION and "refused" in verdict.error
    assert asyncio.run(union.authorize(GET_METRICS)).decision is Decision.ALLOW


def test_the_review_body() -> None:
    seen: list[Any] = []

    async def review(body: Any) -> Any:
        seen.append(body)
        return {"allowed": True}

    user = UserInfo("bob", uid="42", groups=("a", "system:authenticated"), extra={"scopes": ("x",)})
    asyncio.run(
        ReviewAuthorizer(review, allow_ttl_s=0, deny_ttl_s=0)(Attributes(user, "post", "/debug/flags/v"))
    )
    assert seen == [
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "nonResourceAttributes": {"path": "/debug/flags/v", "verb": "post"},
                "user": "bob",
                "groups": ["a", "system:authenticated"],
                "uid": "42",
                "extra": {"scopes": ["x"]},
            },
        }
    ]
