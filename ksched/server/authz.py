"""Delegated authorization of the secure port, in upstream's order (DelegatingAuthorizationOptions):

1. always-allow groups (``--authorization-always-allow-groups``, default ``system:masters``);
2. always-allow paths (``--authorization-always-allow-paths``, default /healthz, /readyz, /livez):
   exact paths, or prefixes with a trailing ``*``; the leading ``/`` is optional (upstream's
   authorization/path);
3. a SubjectAccessReview (authorization.k8s.io/v1) at the API server for the non-resource path and
   the lowercase HTTP verb, its answer cached: allowed for ``allow_ttl_s``, not allowed for
   ``deny_ttl_s`` (upstream's webhook authorizer cache); a review that failed is not cached.

The first that allows or denies decides; without any opinion the request is forbidden. A review
that failed, with nobody allowing, is an internal error (500), as upstream's WithAuthorization.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from ksched.errors import InputError
from ksched.server.authn import UserInfo

MAX_CACHED_DECISIONS = 8192


class Decision(Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks to do: upstream's non-resource authorizer.Attributes."""

    user: UserInfo
    verb: str
    """The HTTP method in lower case (get, post, put, delete, ...), as upstream's RequestInfo."""
    path: str


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reason: str = ""
    error: str = ""
    """Set when a review failed and nobody decided."""


Authorizer = Callable[[Attributes], Awaitable[Verdict]]


def path_authorizer(always_allow_paths: Sequence[str]) -> Authorizer:
    """Upstream's path.NewAuthorizer; a ``*`` anywhere but at the end is an error."""
    exact: set[str] = set()
    prefixes: list[str] = []
    for raw in always_allow_paths:
        p = raw.removeprefix("/")
        if not p:
            exact.add(p)
            continue
        if "*" in p[:-1]:
            raise InputError(f"--authorization-always-allow-paths: only trailing * allowed in {p!r}")
        if p.endswith("*"):
            prefixes.append(p[:-1])
        else:
            exact.add(p)

    async def authorize(attrs: Attributes) -> Verdict:
        p = attrs.path.removeprefix("/")
        if p in exact or any(p.startswith(prefix) for prefix in prefixes):
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.NO_OPINION)

    return authorize


def group_authorizer(groups: Sequence[str]) -> Authorizer:
    """Upstream's authorizerfactory.NewPrivilegedGroups."""
    wanted = frozenset(groups)

    async def authorize(attrs: Attributes) -> Verdict:
        if wanted.intersection(attrs.user.groups):
            return Verdict(Decision.ALLOW)
        return Verdict(Decision.NO_OPINION)

    return authorize


def review_body(attrs: Attributes) -> dict[str, object]:
    """The SubjectAccessReview upstream's webhook authorizer posts for a non-resource request."""
    spec: dict[str, object] = {
        "nonResourceAttributes": {"path": attrs.path, "verb": attrs.verb},
        "user": attrs.user.name,
        "groups": list(attrs.user.groups),
    }
    if attrs.user.uid:
        spec["uid"] = attrs.user.uid
    if attrs.user.extra:
        spec["extra"] = {k: list(v) for k, v in attrs.user.extra.items()}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


AccessReview = Callable[[dict[str, object]], Awaitable[dict[str, object]]]
"""Post a SubjectAccessReview, return its ``status``; raises on a failed request."""


def _key(attrs: Attributes) -> tuple[object, ...]:
    u = attrs.user
    return (u.name, u.uid, u.groups, tuple(sorted(u.extra.items())), attrs.verb, attrs.path)


class ReviewAuthorizer:
    """Step 3, with upstream's webhook cache (allowed and not-allowed answers, separate TTLs)."""

    def __init__(
        self,
        review: AccessReview,
        *,
        allow_ttl_s: float,
        deny_ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._review = review
        self._allow_ttl = allow_ttl_s
        self._deny_ttl = deny_ttl_s
        self._clock = clock
        self._cache: dict[tuple[object, ...], tuple[Verdict, float]] = {}

    async def __call__(self, attrs: Attributes) -> Verdict:
        key = _key(attrs)
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None and hit[1] > now:
            return hit[0]
        try:
            status = await self._review(review_body(attrs))
        except Exception as exc:  # any failure of the review is a 500, never an allow
            return Verdict(Decision.NO_OPINION, error=f"SubjectAccessReview failed: {exc}")
        reason = str(status.get("reason") or "")
        if status.get("allowed"):
            verdict, ttl = Verdict(Decision.ALLOW, reason), self._allow_ttl
        elif status.get("denied"):
            verdict, ttl = Verdict(Decision.DENY, reason), self._deny_ttl
        else:
            verdict, ttl = Verdict(Decision.NO_OPINION, reason), self._deny_ttl
        if ttl > 0:
            if len(self._cache) >= MAX_CACHED_DECISIONS:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = (verdict, now + ttl)
        return verdict


class UnionAuthorizer:
    """The first authorizer with an opinion decides; errors of the others are kept for the 500."""

    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self._authorizers = tuple(authorizers)

    async def authorize(self, attrs: Attributes) -> Verdict:
        errors: list[str] = []
        reasons: list[str] = []
        for authorizer in self._authorizers:
            verdict = await authorizer(attrs)
            if verdict.decision is not Decision.NO_OPINION:
                return verdict
            if verdict.error:
                errors.append(verdict.error)
            if verdict.reason:
                reasons.append(verdict.reason)
        return Verdict(Decision.NO_OPINION, "\n".join(reasons), "; ".join(errors))
