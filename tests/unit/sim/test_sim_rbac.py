"""The embedded cluster's RBAC evaluator, request attributes and static tokens.

Tables ported from upstream: plugin/pkg/auth/authorizer/rbac/rbac_test.go (``TestAuthorizer``: the
four binding sets with their should-pass / should-fail requests; ``TestRuleMatches``: every rule
and request pair) and the request-info cases of staging/src/k8s.io/apiserver/pkg/endpoints/request
(``requestinfo_test.go``) that the sim's paths can take. Not ported: upstream's
``TestAuthorizerAppliesToServiceAccount`` variants over escalation checks (the sim has no
escalation prevention on RBAC writes), and request-info cases for paths the sim never serves
(``/api/v1/proxy``, legacy ``/watch`` prefixes with subresources).
"""

from __future__ import annotations

from typing import Any

import pytest
from multidict import CIMultiDict

from ksched.errors import ManifestError
from ksched.sim import _admission as admission
from ksched.sim._authn import ANONYMOUS, Authenticator, RequestHeaderConfig, TokenStore, Unauthorized
from ksched.sim._rbac import Attributes, RbacAuthorizer, UserInfo, forbidden_message, rule_allows
from ksched.sim._requestinfo import request_attributes
from ksched.sim._review_proto import PROTOBUF, decode_review
from ksched.sim._status import StatusError
from ksched.sim.store import Store

RBAC = "rbac.authorization.k8s.io"


@pytest.fixture(autouse=True)
def _rules_past_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """upstream's authorizer tables hold rules kube-apiserver's validation refuses (resources and
    URLs in one rule, as ``newRule`` builds them); the authorizer is tested on them as stored."""
    monkeypatch.setitem(admission.VALIDATORS, f"clusterroles.{RBAC}", lambda *_: None)


def new_rule(verbs: str, groups: str, resources: str, urls: str) -> dict[str, Any]:
    """upstream's newRule: comma-separated lists (an empty string is a list of one empty item)."""
    return {
        "verbs": verbs.split(","),
        "apiGroups": groups.split(","),
        "resources": resources.split(","),
        "nonResourceURLs": urls.split(","),
    }


def _subjects(subjects: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for s in subjects:
        kind, name = s.split(":", 1)
        out.append({"kind": kind, "name": name, **({"apiGroup": RBAC} if kind != "ServiceAccount" else {})})
    return out


def cluster_role(name: str, *rules: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    return ("clusterroles", "", {"metadata": {"name": name}, "rules": list(rules)})


def crb(role: str, *subjects: str) -> tuple[str, str, dict[str, Any]]:
    body = {
        "metadata": {"name": f"crb-{role}"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": _subjects(subjects),
    }
    return ("clusterrolebindings", "", body)


def rb_to_cluster_role(ns: str, role: str, *subjects: str) -> tuple[str, str, dict[str, Any]]:
    body = {
        "metadata": {"name": f"rb-{role}", "namespace": ns},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": _subjects(subjects),
    }
    return ("rolebindings", ns, body)


def attrs(user: str, groups: str, verb: str, resource: str, sub: str, ns: str, group: str) -> Attributes:
    """upstream's defaultAttributes (groups split on commas, as its GetUser does)."""
    return Attributes(UserInfo(user, groups=tuple(groups.split(","))), verb, True, group, resource, sub, ns)


def url(user: str = "", groups: tuple[str, ...] = (), verb: str = "get", path: str = "") -> Attributes:
    return Attributes(UserInfo(user, groups=groups), verb, resource_request=False, path=path)


AUTHORIZER_CASES = [
    pytest.param(
        [
            cluster_role("admin", new_rule("*", "*", "*", "*")),
            rb_to_cluster_role("ns1", "admin", "User:admin", "Group:admins"),
        ],
        [
            attrs("admin", "", "get", "Pods", "", "ns1", ""),
            attrs("admin", "", "watch", "Pods", "", "ns1", ""),
            attrs("admin", "group1", "watch", "Foobar", "", "ns1", ""),
            attrs("joe", "admins", "watch", "Foobar", "", "ns1", ""),
            attrs("joe", "group1,admins", "watch", "Foobar", "", "ns1", ""),
        ],
        [
            attrs("admin", "", "GET", "Pods", "", "ns2", ""),
            attrs("admin", "", "GET", "Nodes", "", "", ""),
            attrs("admin", "admins", "GET", "Pods", "", "ns2", ""),
            attrs("admin", "admins", "GET", "Nodes", "", "", ""),
        ],
        id="a namespace RoleBinding to a star ClusterRole grants only in that namespace",
    ),
    pytest.param(
        [
            cluster_role("non-resource-url-getter", new_rule("get", "", "", "/apis")),
            cluster_role("non-resource-url", new_rule("*", "", "", "/apis")),
            cluster_role("non-resource-url-prefix", new_rule("get", "", "", "/apis/*")),
            crb("non-resource-url-getter", "User:foo", "Group:bar"),
            crb("non-resource-url", "User:admin", "Group:admin"),
            crb("non-resource-url-prefix", "User:prefixed", "Group:prefixed"),
        ],
        [
            url("foo", path="/apis"),
            url(groups=("bar",), path="/apis"),
            url("admin", path="/apis"),
            url(groups=("admin",), path="/apis"),
            url("admin", verb="watch", path="/apis"),
            url(groups=("admin",), verb="watch", path="/apis"),
            url("prefixed", path="/apis/v1"),
            url(groups=("prefixed",), path="/apis/v1"),
            url("prefixed", path="/apis/v1/foobar"),
            url(groups=("prefixed",), path="/apis/v1/foorbar"),
        ],
        [
            url("foo", verb="watch", path="/apis"),
            url(groups=("bar",), verb="watch", path="/apis"),
            url("foo", path="/api/v1"),
            url(groups=("bar",), path="/api/v1"),
            url("admin", path="/api/v1"),
            url(groups=("admin",), path="/api/v1"),
            url("prefixed", path="/api/v1"),
            url(groups=("prefixed",), path="/api/v1"),
        ],
        id="non-resource URLs: exact, any verb, and a trailing-star prefix",
    ),
    pytest.param(
        [
            cluster_role("admin", new_rule("*", "*", "pods", "*")),
            rb_to_cluster_role("ns1", "admin", "User:admin", "Group:admins"),
        ],
        [attrs("admin", "", "get", "pods", "", "ns1", "")],
        [attrs("admin", "", "get", "pods", "status", "ns1", "")],
        id="a resource rule does not cover its subresources",
    ),
    pytest.param(
        [
            cluster_role("admin", new_rule("*", "*", "pods/status", "*")),
            rb_to_cluster_role("ns1", "admin", "User:admin", "Group:admins"),
        ],
        [attrs("admin", "", "get", "pods", "status", "ns1", "")],
        [attrs("admin", "", "get", "pods", "", "ns1", "")],
        id="a subresource rule does not cover its resource",
    ),
]


@pytest.mark.parametrize(("objects", "should_pass", "should_fail"), AUTHORIZER_CASES)
def test_rbac_authorizer_table(
    objects: list[tuple[str, str, dict[str, Any]]],
    should_pass: list[Attributes],
    should_fail: list[Attributes],
) -> None:
    store = Store()
    for ns in {ns for _, ns, _ in objects if ns}:
        store.create("namespaces", {"metadata": {"name": ns}})
    authz = RbacAuthorizer(store)
    for kind, ns, body in objects:
        store.create(f"{kind}.{RBAC}", body, namespace=ns or None)
    for a in should_pass:
        assert authz.authorize(a)[0], f"incorrectly restricted {a}"
    for a in should_fail:
        assert not authz.authorize(a)[0], f"incorrectly passed {a}"


def _res(verb: str, group: str, resource: str, sub: str = "") -> Attributes:
    return Attributes(UserInfo(""), verb, True, group, resource, sub)


def _nonres(verb: str, path: str) -> Attributes:
    return Attributes(UserInfo(""), verb, resource_request=False, path=path)


def _rule(
    verbs: tuple[str, ...],
    groups: tuple[str, ...] = (),
    resources: tuple[str, ...] = (),
    urls: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "verbs": list(verbs),
        "apiGroups": list(groups),
        "resources": list(resources),
        "nonResourceURLs": list(urls),
    }


def _grid(rule_verbs: str, g: str, r: str) -> dict[Attributes, bool]:
    """The 8 requests upstream's resource cases try: verb1/2 x group1/2 x resource1/2."""
    return {
        _res(v, gr, rs): (rule_verbs in ("*", v)) and g in ("*", gr) and r in ("*", rs)
        for v in ("verb1", "verb2")
        for gr in ("group1", "group2")
        for rs in ("resource1", "resource2")
    }


URLS = ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")
RULE_CASES = [
    pytest.param(
        _rule(("*",), ("group1",), ("resource1",)),
        _grid("*", "group1", "resource1"),
        id="star verb, exact match other",
    ),
    pytest.param(
        _rule(("verb1",), ("*",), ("resource1",)),
        _grid("verb1", "*", "resource1"),
        id="star group, exact match other",
    ),
    pytest.param(
        _rule(("verb1",), ("group1",), ("*",)),
        _grid("verb1", "group1", "*"),
        id="star resource, exact match other",
    ),
    pytest.param(
        _rule(("verb1", "verb2"), ("group1", "group2"), ("resource1", "resource2")),
        {a: True for a in _grid("*", "*", "*")},
        id="tuple expansion",
    ),
    pytest.param(
        _rule(("*",), ("*",), ("resource1/subresource1",)),
        {
            _res(v, g, r, s): (r, s) == ("resource1", "subresource1")
            for v in ("verb1", "verb2")
            for g, r, s in (
                ("group1", "resource1", "subresource1"),
                ("group2", "resource1", "subresource2"),
                ("group1", "resource2", "subresource1"),
                ("group2", "resource2", "subresource1"),
            )
        },
        id="subresource expansion",
    ),
    pytest.param(
        _rule(("verb1",), urls=("*",)),
        {**{_nonres("verb1", u): True for u in URLS}, **{_nonres("verb2", u): False for u in URLS}},
        id="star nonresource, exact match other",
    ),
    pytest.param(
        _rule(("verb1",), urls=("/foo/*",)),
        {
            **{_nonres("verb1", u): u != "/foo" for u in URLS},
            **{_nonres("verb1", "/not" + u[1:]): False for u in URLS},
        },
        id="star nonresource subpath",
    ),
    pytest.param(
        _rule(("*",), urls=("/foo", "/foo/bar/one")),
        {_nonres(v, u): u in ("/foo", "/foo/bar/one") for v in ("verb1", "verb2") for u in URLS},
        id="star verb, exact nonresource",
    ),
]


@pytest.mark.parametrize(("rule", "expected"), RULE_CASES)
def test_rbac_rule_allows_table(rule: dict[str, Any], expected: dict[Attributes, bool]) -> None:
    for request, want in expected.items():
        assert rule_allows(request, rule) is want, request


def test_rbac_star_subresource_and_resource_names() -> None:
    star_sub = {"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}
    assert rule_allows(_res("get", "", "pods", "status"), star_sub)
    assert not rule_allows(_res("get", "", "pods"), star_sub)
    named = {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}
    a = Attributes(UserInfo(""), "get", True, "", "configmaps", "", "kube-system", "a")
    assert rule_allows(a, named)
    assert not rule_allows(Attributes(UserInfo(""), "list", True, "", "configmaps", "", "kube-system"), named)
    assert not rule_allows(
        Attributes(UserInfo(""), "get", True, "", "configmaps", "", "kube-system", "b"), named
    )


def test_rbac_masters_always_allowed_and_reasons() -> None:
    store = Store()
    authz = RbacAuthorizer(store)
    masters = UserInfo("root", groups=("system:masters",))
    assert authz.authorize(Attributes(masters, "delete", True, "", "nodes")) == (True, "")
    kind, _, body = crb("missing-role", "User:alice")
    store.create(f"{kind}.{RBAC}", body)
    allowed, reason = authz.authorize(Attributes(UserInfo("alice"), "get", True, "", "nodes"))
    assert not allowed
    assert reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "missing-role" not found'
    # The cached denial is dropped when the role appears.
    kind, _, role = cluster_role("missing-role", new_rule("get", "", "nodes", ""))
    store.create(f"{kind}.{RBAC}", role)
    allowed, reason = authz.authorize(Attributes(UserInfo("alice"), "get", True, "", "nodes"))
    assert allowed
    assert reason == (
        'RBAC: allowed by ClusterRoleBinding "crb-missing-role" of ClusterRole "missing-role" to User "alice"'
    )


def test_rbac_service_account_subject_defaults_to_binding_namespace() -> None:
    store = Store()
    store.create("namespaces", {"metadata": {"name": "ns1"}})
    authz = RbacAuthorizer(store)
    store.create(f"clusterroles.{RBAC}", cluster_role("r", new_rule("get", "", "pods", ""))[2])
    store.create(
        f"rolebindings.{RBAC}", rb_to_cluster_role("ns1", "r", "ServiceAccount:sa")[2], namespace="ns1"
    )
    sa = UserInfo("system:serviceaccount:ns1:sa")
    allowed, reason = authz.authorize(Attributes(sa, "get", True, "", "pods", "", "ns1"))
    assert allowed
    assert reason == 'RBAC: allowed by RoleBinding "rb-r/ns1" of ClusterRole "r" to ServiceAccount "sa/ns1"'
    assert not authz.authorize(
        Attributes(UserInfo("system:serviceaccount:ns2:sa"), "get", True, "", "pods", "", "ns1")
    )[0]


@pytest.mark.parametrize(
    ("a", "message"),
    [
        pytest.param(
            Attributes(UserInfo("bob"), "list", True, "", "pods", "", "default"),
            'User "bob" cannot list resource "pods" in API group "" in the namespace "default"',
            id="namespaced",
        ),
        pytest.param(
            Attributes(UserInfo("bob"), "create", True, "", "pods", "binding", "ns"),
            'User "bob" cannot create resource "pods/binding" in API group "" in the namespace "ns"',
            id="subresource",
        ),
        pytest.param(
            Attributes(UserInfo("bob"), "get", True, "coordination.k8s.io", "leases"),
            'User "bob" cannot get resource "leases" in API group "coordination.k8s.io" at the cluster scope',
            id="cluster scope",
        ),
        pytest.param(
            Attributes(UserInfo("bob"), "get", resource_request=False, path="/metrics"),
            'User "bob" cannot get path "/metrics"',
            id="non-resource",
        ),
    ],
)
def test_rbac_forbidden_message(a: Attributes, message: str) -> None:
    assert forbidden_message(a) == message


U = UserInfo("u")


@pytest.mark.parametrize(
    ("method", "path", "query", "want"),
    [
        pytest.param(
            "GET", "/api/v1/namespaces", {}, ("list", "", "namespaces", "", "", ""), id="list namespaces"
        ),
        pytest.param(
            "GET",
            "/api/v1/namespaces/other",
            {},
            ("get", "", "namespaces", "", "other", "other"),
            id="get a namespace names itself as namespace",
        ),
        pytest.param(
            "GET", "/api/v1/namespaces/other/pods", {}, ("list", "", "pods", "", "", "other"), id="list pods"
        ),
        pytest.param(
            "GET",
            "/api/v1/namespaces/other/pods/foo",
            {},
            ("get", "", "pods", "", "foo", "other"),
            id="get pod",
        ),
        pytest.param(
            "GET", "/api/v1/pods", {"watch": "true"}, ("watch", "", "pods", "", "", ""), id="watch all"
        ),
        pytest.param(
            "GET",
            "/api/v1/watch/namespaces/other/pods",
            {},
            ("watch", "", "pods", "", "", "other"),
            id="watch prefix",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/other/pods/foo/binding",
            {},
            ("create", "", "pods", "binding", "foo", "other"),
            id="create binding",
        ),
        pytest.param(
            "PUT",
            "/api/v1/namespaces/other/finalize",
            {},
            ("update", "", "namespaces", "finalize", "other", "other"),
            id="namespace finalize",
        ),
        pytest.param(
            "DELETE",
            "/api/v1/namespaces/other/pods",
            {},
            ("deletecollection", "", "pods", "", "", "other"),
            id="deletecollection",
        ),
        pytest.param(
            "PATCH",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
            {},
            ("patch", "coordination.k8s.io", "leases", "", "kube-scheduler", "kube-system"),
            id="patch lease",
        ),
        pytest.param(
            "GET",
            "/api/v1/namespaces/kube-system/configmaps",
            {"fieldSelector": "metadata.name=extension-apiserver-authentication", "watch": "1"},
            ("watch", "", "configmaps", "", "extension-apiserver-authentication", "kube-system"),
            id="a watch narrowed to one name names it",
        ),
    ],
)
def test_sim_request_attributes_resource(
    method: str, path: str, query: dict[str, str], want: tuple[str, ...]
) -> None:
    a = request_attributes(U, method, path, query)
    assert a.resource_request
    assert (a.verb, a.api_group, a.resource, a.subresource, a.name, a.namespace) == want


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/healthz", "get"),
        ("GET", "/api", "get"),
        ("GET", "/apis/apps", "get"),
        ("POST", "/admin/x", "post"),
        ("GET", "/api/v1", "get"),
        ("GET", "/apis/apps/v1", "get"),
    ],
)
def test_sim_request_attributes_non_resource(method: str, path: str, verb: str) -> None:
    a = request_attributes(U, method, path, {})
    assert not a.resource_request
    assert (a.verb, a.path) == (verb, path)


def test_sim_token_file_format() -> None:
    tokens = TokenStore()
    text = 'abc,alice,1001,"devs,ops"\n\ndef,bob,1002\n'
    assert tokens.load_text(text) == 2
    assert tokens.lookup("abc") == UserInfo("alice", "1001", ("devs", "ops"))
    assert tokens.lookup("def") == UserInfo("bob", "1002", ())
    assert tokens.lookup("nope") is None
    with pytest.raises(ManifestError, match="must have at least 3 columns"):
        tokens.load_text("only,two\n", "tokens.csv")


# -- protobuf review bodies (what client-go's typed clients send) ---------------------------------
def _pb(num: int, value: bytes | str) -> bytes:
    """One length-delimited protobuf field."""
    raw = value.encode() if isinstance(value, str) else value
    out, n = bytearray([num << 3 | 2]), len(raw)
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + raw


def _unknown(api_version: str, kind: str, spec: bytes) -> bytes:
    """k8s magic + runtime.Unknown{typeMeta, raw: object{metadata, spec}}."""
    obj = _pb(1, b"") + _pb(2, spec)
    return b"k8s\x00" + _pb(1, _pb(1, api_version) + _pb(2, kind)) + _pb(2, obj) + _pb(4, PROTOBUF)


def test_sim_review_protobuf_subject_access_review() -> None:
    ra = (
        _pb(1, "kube-system") + _pb(2, "get") + _pb(3, "coordination.k8s.io") + _pb(5, "leases") + _pb(7, "x")
    )
    extra = _pb(1, "scopes") + _pb(2, _pb(1, "a") + _pb(1, "b"))
    spec = _pb(1, ra) + _pb(3, "alice") + _pb(4, "g1") + _pb(4, "g2") + _pb(5, extra) + _pb(6, "uid-1")
    body = decode_review(
        _unknown("authorization.k8s.io/v1", "SubjectAccessReview", spec), "SubjectAccessReview"
    )
    assert body == {
        "kind": "SubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "namespace": "kube-system",
                "verb": "get",
                "group": "coordination.k8s.io",
                "resource": "leases",
                "name": "x",
            },
            "user": "alice",
            "uid": "uid-1",
            "groups": ["g1", "g2"],
            "extra": {"scopes": ["a", "b"]},
        },
    }


def test_sim_review_protobuf_token_and_non_resource() -> None:
    token = decode_review(
        _unknown("authentication.k8s.io/v1", "TokenReview", _pb(1, "tok") + _pb(2, "aud1")), "TokenReview"
    )
    assert token["spec"] == {"token": "tok", "audiences": ["aud1"]}
    nra = _pb(2, _pb(1, "/metrics") + _pb(2, "get"))
    ssar = decode_review(
        _unknown("authorization.k8s.io/v1", "SelfSubjectAccessReview", nra), "SelfSubjectAccessReview"
    )
    assert ssar["spec"] == {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    with pytest.raises(StatusError, match="could not be decoded"):
        decode_review(b"k8s\x00\x0a\xff", "TokenReview")


# -- authenticators (the peer certificate as ssl.getpeercert() reports it) ------------------------
def _cert(cn: str, issuer: str, *orgs: str) -> dict[str, Any]:
    subject = (*((("organizationName", o),) for o in orgs), (("commonName", cn),))
    return {"subject": subject, "issuer": ((("commonName", issuer),),)}


def _authenticator(tokens: TokenStore | None = None) -> Authenticator:
    return Authenticator(
        tokens or TokenStore(),
        client_ca_name="ca",
        front_proxy_ca_name="fp-ca",
        request_header=RequestHeaderConfig(),
    )


def test_sim_authenticators_in_upstream_order() -> None:
    tokens = TokenStore()
    tokens.add("tok", "tina", ("t",))
    authn = _authenticator(tokens)
    proxy_headers = CIMultiDict(
        [
            ("X-Remote-User", "pat"),
            ("X-Remote-Group", "a"),
            ("x-remote-group", "b"),
            ("X-Remote-Uid", "9"),
            ("X-Remote-Extra-Scopes", "s1"),
            ("x-remote-extra-scopes", "s2"),
            ("X-Remote-Extra-Foo%2Fbar", "v"),
        ]
    )
    assert authn.authenticate(_cert("front-proxy-client", "fp-ca"), proxy_headers) == UserInfo(
        "pat", "9", ("a", "b", "system:authenticated"), (("foo/bar", ("v",)), ("scopes", ("s1", "s2")))
    )
    with pytest.raises(Unauthorized, match="not in the allowed list"):
        authn.authenticate(_cert("other", "fp-ca"), proxy_headers)
    # A front-proxy certificate without a user header, and headers with a cluster-CA certificate,
    # are not request-header authentication.
    assert authn.authenticate(_cert("front-proxy-client", "fp-ca"), CIMultiDict()) == ANONYMOUS
    assert authn.authenticate(_cert("cert-user", "ca", "o1"), proxy_headers) == UserInfo(
        "cert-user", groups=("o1", "system:authenticated")
    )
    # The certificate wins over a token; a token alone; a bad token is never anonymous.
    bearer = CIMultiDict([("Authorization", "Bearer tok")])
    assert authn.authenticate(_cert("cert-user", "ca"), bearer).name == "cert-user"
    assert authn.authenticate(None, bearer) == UserInfo("tina", groups=("t", "system:authenticated"))
    with pytest.raises(Unauthorized):
        authn.authenticate(None, CIMultiDict([("Authorization", "Bearer nope")]))
    assert authn.authenticate(None, CIMultiDict()) == ANONYMOUS
    masters = TokenStore()
    masters.add("m", "m", ("system:authenticated",))
    assert _authenticator(masters).authenticate(
        None, CIMultiDict([("Authorization", "bearer m")])
    ).groups == ("system:authenticated",)
