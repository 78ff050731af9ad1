"""The extender wire format both ways (``k8s.io/kube-scheduler/extender/v1``), after upstream
``extender_test.go``'s HTTP cases: requests carry Go's field names and nulls; replies are read
case-insensitively as Go does, and every malformed one is an ExtenderError naming the extender."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ksched.errors import ExtenderError
from ksched.framework.extender import Victims
from ksched.model.node import node_from_dict
from ksched.scheduler.extenders import wire
from tests.builders import cluster_of, make_node, make_pod, pod

NODES = [node_from_dict(make_node(n, cpu=2, memory="1Gi", pods=10, labels={"k": n})) for n in ("a", "b")]
REPLY = wire.Reply("http://e", "filter")


def test_args_for_a_node_cache_capable_extender() -> None:
    args = orjson.loads(wire.extender_args(pod("p", uid="u1"), NODES, node_cache_capable=True))
    assert args["Nodes"] is None and args["NodeNames"] == ["a", "b"]
    assert args["Pod"]["metadata"] == {"name": "p", "namespace": "default", "uid": "u1"}


def test_args_with_node_objects() -> None:
    store = wire.NodeObjects()
    args = orjson.loads(wire.extender_args(pod("p"), NODES, node_cache_capable=False, objects=store))
    assert args["NodeNames"] is None and args["Nodes"]["kind"] == "NodeList"
    first = args["Nodes"]["items"][0]
    assert first["metadata"]["labels"] == {"k": "a"}
    assert first["status"]["allocatable"] == {"cpu": "2000m", "memory": str(1 << 30), "pods": "10"}
    again = wire.extender_args(pod("p"), NODES, node_cache_capable=False, objects=store)
    assert orjson.loads(again)["Nodes"] == args["Nodes"]


def test_pod_carries_its_requests() -> None:
    obj = wire.pod_object(pod("p", requests={"cpu": "250m", "example.com/foo": "2"}))
    assert obj["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "250m", "example.com/foo": "2"}


def test_binding_and_preemption_args() -> None:
    p = pod("p", uid="u1")
    assert wire.binding_args(p, "a") == {
        "PodName": "p",
        "PodNamespace": "default",
        "PodUID": "u1",
        "Node": "a",
    }
    meta = wire.preemption_args(p, {"a": Victims((p,), 1)}, node_cache_capable=True)
    assert meta["NodeNameToVictims"] is None
    assert meta["NodeNameToMetaVictims"] == {"a": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 1}}
    full = wire.preemption_args(p, {"a": Victims((p,), 0)}, node_cache_capable=False)
    assert full["NodeNameToMetaVictims"] is None
    assert full["NodeNameToVictims"]["a"]["Pods"][0]["metadata"]["uid"] == "u1"


FILTER_CASES: list[Any] = [
    pytest.param(
        {"NodeNames": ["a"], "FailedNodes": {"b": "no"}}, True, (("a",), {"b": "no"}, {}), id="names"
    ),
    pytest.param(
        {"nodenames": ["b"], "failedAndUnresolvableNodes": {"a": "never"}},
        True,
        (("b",), {}, {"a": "never"}),
        id="keys matched case-insensitively",
    ),
    pytest.param(
        {"Nodes": {"items": [{"metadata": {"name": "b"}}]}}, False, (("b",), {}, {}), id="node list"
    ),
    pytest.param(
        {"NodeNames": ["a"]}, False, ((), {}, {}), id="names to a non-cache-capable extender: ignored"
    ),
    pytest.param({}, True, ((), {}, {}), id="nothing: no node passes"),
]


@pytest.mark.parametrize(("reply", "cache", "want"), FILTER_CASES)
def test_filter_replies(reply: dict[str, Any], cache: bool, want: tuple[Any, ...]) -> None:
    got = wire.filter_verdict(REPLY, reply, ["a", "b"], node_cache_capable=cache)
    assert (got.nodes, dict(got.failed), dict(got.failed_and_unresolvable)) == want


@pytest.mark.parametrize(
    ("reply", "cache", "message"),
    [
        pytest.param({"Error": "it broke"}, True, "it broke", id="the extender's error"),
        pytest.param(
            {"NodeNames": ["c"]},
            True,
            'extender "http://e" claims a filtered node "c" which is not found in the input node list',
            id="unknown node name",
        ),
        pytest.param(
            {"Nodes": {"items": [{"metadata": {"name": "z"}}]}},
            False,
            'claims a filtered node "z"',
            id="unknown node object",
        ),
        pytest.param([1], True, "the reply must be a JSON object", id="not an object"),
        pytest.param({"NodeNames": "a"}, True, "NodeNames has the wrong type (str)", id="names not a list"),
        pytest.param({"NodeNames": [1]}, True, "a node name must be a string", id="name not a string"),
        pytest.param(
            {"FailedNodes": {"a": 1}}, True, "FailedNodes['a'] must be a string", id="reason not a string"
        ),
    ],
)
def test_malformed_filter_replies(reply: Any, cache: bool, message: str) -> None:
    with pytest.raises(ExtenderError) as err:
        wire.filter_verdict(REPLY, reply, ["a", "b"], node_cache_capable=cache)
    assert message in str(err.value)
    assert err.value.extender == "http://e" and err.value.verb == "filter"


def test_host_priorities() -> None:
    reply = wire.Reply("http://e", "prioritize")
    assert wire.host_priorities(reply, [{"Host": "a", "Score": 3}, {"host": "b", "score": 10}]) == [
        ("a", 3),
        ("b", 10),
    ]
    assert wire.host_priorities(reply, None) == []
    with pytest.raises(ExtenderError, match="Score has the wrong type"):
        wire.host_priorities(reply, [{"Host": "a", "Score": "3"}])
    with pytest.raises(ExtenderError, match="must be a JSON list"):
        wire.host_priorities(reply, {"Host": "a"})


def test_meta_victims_become_the_cache_pods() -> None:
    cache = cluster_of(
        [make_node("a", cpu=2, memory="1Gi", pods=10)], [make_pod("v", uid="v1", node_name="a")]
    )
    reply = wire.Reply("http://e", "preempt")
    got = wire.meta_victims(
        reply, {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 2}}}, cache
    )
    assert [p.uid for p in got["a"].pods] == ["v1"] and got["a"].num_pdb_violations == 2
    with pytest.raises(ExtenderError, match='nodeinfo not found for node name "b"'):
        wire.meta_victims(reply, {"NodeNameToMetaVictims": {"b": {"Pods": []}}}, cache)
    with pytest.raises(ExtenderError) as err:
        wire.meta_victims(reply, {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "x"}]}}}, cache)
    assert str(err.value) == (
        "extender: http://e claims to preempt pod (UID: &{x}) on node: a, "
        "but the pod is not found on that node"
    )
