"""API paths from names (:mod:`ksched.model.paths`): every segment escaped, nothing else changed.

The end-to-end check against the embedded cluster (every writer, look-alike names) is
``tests/integration/kube/test_hostile_names.py``.
"""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from ksched.model import paths
from ksched.model.paths import PathSegmentError

PLAIN = ["pod-0", "web-1.default", "a", "x" * 253, "UPPER_case~tilde", "0.1.2"]
ODD = [
    "tw\nin",
    "twin?x",
    "twin#",
    "with space",
    "nul\x00byte",
    "caf\u00e9",
    "\u65e5\u672c",
    "tab\there",
    "cr\rlf\n",
    "quote\"'",
    "semi;colon,comma",
    "plus+equals=",
    "colon:at@",
    "amp&dollar$",
    "\u202eright-to-left",
    ".hidden",
    "...",
    "emoji\U0001f600",
]
REFUSED = [
    ("", "resource name may not be empty"),
    (".", "invalid resource name \".\": [may not be '.']"),
    ("..", "invalid resource name \"..\": [may not be '..']"),
    ("a/b", "invalid resource name \"a/b\": [may not contain '/']"),
    ("twin/binding", "invalid resource name \"twin/binding\": [may not contain '/']"),
    ("50%", "invalid resource name \"50%\": [may not contain '%']"),
    ("tw%0Ain", "invalid resource name \"tw%0Ain\": [may not contain '%']"),
    ("/%", "invalid resource name \"/%\": [may not contain '/' may not contain '%']"),
]
UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _is_encoded(segment: str) -> bool:
    """Only unreserved characters and %XX escapes, and no dot segment."""
    i = 0
    while i < len(segment):
        if segment[i] == "%":
            assert all(c in "0123456789ABCDEF" for c in segment[i + 1 : i + 3]), segment
            i += 3
            continue
        if segment[i] not in UNRESERVED:
            return False
        i += 1
    return segment not in (".", "..")


@pytest.mark.parametrize("name", PLAIN)
def test_a_plain_name_is_used_as_is(name: str) -> None:
    assert paths.name_segment(name) == name
    assert paths.pod_path("default", name, "binding") == f"/api/v1/namespaces/default/pods/{name}/binding"


@pytest.mark.parametrize("name", ODD)
def test_an_odd_name_is_escaped_and_round_trips(name: str) -> None:
    seg = paths.name_segment(name)
    assert _is_encoded(seg)
    assert unquote(seg, errors="strict") == name
    path = paths.pod_path("ns-1", name, "status")
    assert path.split("/") == ["", "api", "v1", "namespaces", "ns-1", "pods", seg, "status"]


@pytest.mark.parametrize("name", ODD + PLAIN + [n for n, _ in REFUSED if n])
def test_escape_encodes_anything_and_round_trips(name: str) -> None:
    seg = paths.escape(name)
    assert _is_encoded(seg) and "/" not in seg
    assert unquote(seg, errors="strict") == name


def test_specific_escapes() -> None:
    assert paths.pod_path("default", "tw\nin") == "/api/v1/namespaces/default/pods/tw%0Ain"
    assert (
        paths.pod_path("default", "twin?x", "binding") == "/api/v1/namespaces/default/pods/twin%3Fx/binding"
    )
    assert paths.pod_path("default", "twin#") == "/api/v1/namespaces/default/pods/twin%23"
    assert paths.pod_path("default", "nul\x00") == "/api/v1/namespaces/default/pods/nul%00"
    assert paths.pod_path("default", "\u00e9") == "/api/v1/namespaces/default/pods/%C3%A9"
    assert paths.escape("a/b%") == "a%2Fb%25"
    assert paths.escape("..") == "%2E%2E"


@pytest.mark.parametrize(("name", "message"), REFUSED)
def test_names_client_go_refuses_are_refused(name: str, message: str) -> None:
    with pytest.raises(PathSegmentError) as err:
        paths.pod_path("default", name, "binding")
    assert str(err.value) == message


@pytest.mark.parametrize(("name", "message"), [r for r in REFUSED if r[0]])
def test_namespaces_are_checked_as_names_are(name: str, message: str) -> None:
    want = message.replace("resource name", "namespace")
    for build in (
        lambda: paths.pod_path(name, "p"),
        lambda: paths.events_path(name),
        lambda: paths.lease_path(name, "l"),
        lambda: paths.pvc_path(name, "c"),
    ):
        with pytest.raises(PathSegmentError) as err:
            build()
        assert str(err.value) == want


def test_an_empty_namespace_is_refused_with_client_go_s_message() -> None:
    with pytest.raises(PathSegmentError, match="when a resource name is provided"):
        paths.pod_path("", "p")
    with pytest.raises(PathSegmentError, match="during creation"):
        paths.events_path("")


def test_a_bad_subresource_is_refused() -> None:
    with pytest.raises(PathSegmentError, match="invalid subresource"):
        paths.pod_path("default", "p", "a/b")


def test_every_builder() -> None:
    assert paths.leases_path("kube-system") == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert paths.lease_path("kube-system", "ksched?") == (
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ksched%3F"
    )
    assert paths.events_path("d") == "/apis/events.k8s.io/v1/namespaces/d/events"
    assert paths.event_path("d", "tw\nin.17f") == "/apis/events.k8s.io/v1/namespaces/d/events/tw%0Ain.17f"
    assert paths.pv_path("pv #1") == "/api/v1/persistentvolumes/pv%20%231"
    assert paths.pvc_path("d", "c") == "/api/v1/namespaces/d/persistentvolumeclaims/c"
    assert paths.node_path("n\u00e9") == "/api/v1/nodes/n%C3%A9"
    assert paths.collection_path(paths.CORE, "nodes") == "/api/v1/nodes"
    assert paths.object_path("/apis/g/v1", "things", "t", None, "status") == "/apis/g/v1/things/t/status"


def test_the_segment_cache_stays_bounded() -> None:
    for i in range(3000):
        paths.pod_path(f"ns-{i}", "p")
    assert len(paths._KNOWN) <= 1024
