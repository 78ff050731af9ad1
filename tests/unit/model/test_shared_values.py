"""Records of equal objects share their repeated values, and sharing never changes a value."""

from __future__ import annotations

import pytest

from ksched.model import _shared as shared
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from tests.builders import make_pod


def _node(name: str) -> dict[str, object]:
    return {
        "metadata": {
            "name": name,
            "uid": f"u-{name}",
            "labels": {"kubernetes.io/hostname": name, "zone": "".join(["z", "1"])},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def test_pods_of_one_workload_share_labels_requests_and_names() -> None:
    def decoded(name: str) -> Pod:
        node = "".join(["n-", "1"])  # a string of its own, as each JSON decode gives
        raw = make_pod(name, labels={"app": "web"}, requests={"cpu": "100m"}, node_name=node)
        return pod_from_dict(raw)

    a, b = decoded("a"), decoded("b")
    assert a.labels is b.labels and a.requests is b.requests
    assert a.node_name is b.node_name and a.namespace is b.namespace and a.images is b.images
    assert dict(a.labels) == {"app": "web"} and dict(a.requests) == {"cpu": 100}


def test_nodes_share_allocatable_and_label_values_but_keep_their_own_labels() -> None:
    a, b = node_from_dict(_node("n-1")), node_from_dict(_node("n-2"))
    assert a.allocatable is b.allocatable
    assert a.labels is not b.labels and a.labels["zone"] is b.labels["zone"]
    assert a.labels["kubernetes.io/hostname"] == "n-1" and b.labels["kubernetes.io/hostname"] == "n-2"


def test_a_full_memo_starts_over_and_keeps_values_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared, "MEMO_LIMIT", 2)
    maps = [shared.string_map({"k": str(i)}) for i in range(5)]
    assert [dict(m) for m in maps] == [{"k": str(i)} for i in range(5)]
    values = [shared.value((str(i),)) for i in range(5)]
    assert values == [(str(i),) for i in range(5)]
    assert shared.string_map({}) == {} and shared.value(()) == ()
