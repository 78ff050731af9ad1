"""Always-allow paths and groups: upstream's authorization/path TestNewAuthorizer table, ported as data."""

from __future__ import annotations

import asyncio

import pytest

from ksched.errors import InputError
from ksched.server.authn import UserInfo
from ksched.server.authz import Attributes, Decision, group_authorizer, path_authorizer

# (name, always-allow paths, allowed, no opinion, construction fails)
CASES = [
    ("inner star", ["/foo*bar"], [], [], True),
    ("double star", ["/foo**"], [], [], True),
    ("empty", [], [], ["/"], False),
    ("slash", ["/"], ["/"], ["/foo", "//"], False),
    ("foo", ["/foo"], ["/foo", "foo"], ["/", "", "/bar", "/foo/", "/fooooo", "//foo"], False),
    ("foo slash", ["/foo/"], ["/foo/"], ["/", "", "/bar", "/foo", "/fooooo"], False),
    ("foo slash star", ["/foo/*"], ["/foo/", "/foo/bar/bla"], ["/", "", "/foo", "/bar", "/fooooo"], False),
    ("foo bar", ["/foo", "/bar"], ["/foo", "/bar"], ["/", "", "/foo/", "/bar/", "/fooooo"], False),
    ("foo star", ["/foo*"], ["/foo", "/foooo"], ["/", "", "/fo", "/bar"], False),
    ("star", ["/*"], ["/", "", "/foo", "/foooo"], [], False),
]
ANYONE = UserInfo("someone", groups=("g",))


def _decide(paths: list[str], path: str) -> Decision:
    return asyncio.run(path_authorizer(paths)(Attributes(ANYONE, "get", path))).decision


@pytest.mark.parametrize(
    ("name", "paths", "allowed", "no_opinion", "fails"), CASES, ids=[c[0] for c in CASES]
)
def test_path_authorizer(
    name: str, paths: list[str], allowed: list[str], no_opinion: list[str], fails: bool
) -> None:
    if fails:
        with pytest.raises(InputError, match="only trailing \\* allowed"):
            path_authorizer(paths)
        return
    for path in allowed:
        assert _decide(paths, path) is Decision.ALLOW, (name, path)
    for path in no_opinion:
        assert _decide(paths, path) is Decision.NO_OPINION, (name, path)


def test_privileged_groups() -> None:
    authorize = group_authorizer(["system:masters"])
    admin = UserInfo("root", groups=("system:masters", "system:authenticated"))
    assert asyncio.run(authorize(Attributes(admin, "get", "/metrics"))).decision is Decision.ALLOW
    assert asyncio.run(authorize(Attributes(ANYONE, "get", "/metrics"))).decision is Decision.NO_OPINION
