"""NodeName, ported from upstream ``pkg/scheduler/framework/plugins/nodename/node_name_test.go``
(TestNodeName, 3 cases), plus a run through the framework."""

from __future__ import annotations

import pytest

from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.nodename import ERR_REASON, NodeName, new
from ksched.framework.runtime import Framework
from tests.builders import cluster_of, make_node, pod


@pytest.mark.parametrize(
    ("pod_node", "node", "rejected"),
    [
        pytest.param("", "foo", False, id="no host specified"),
        pytest.param("foo", "foo", False, id="host matches"),
        pytest.param("bar", "foo", True, id="host doesn't match"),
    ],
)
def test_node_name(pod_node: str, node: str, rejected: bool) -> None:
    cluster = cluster_of([make_node(node)])
    reasons, code = NodeName().filter(CycleState(), pod(node_name=pod_node), cluster).reasons_at(0)
    if rejected:
        assert reasons == [ERR_REASON] == ["node(s) didn't match the requested node name"]
        assert code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    else:
        assert reasons == []


def test_framework_run() -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    fw = Framework("default-scheduler", filters=[plugin])
    cluster = cluster_of([make_node("a"), make_node("b"), make_node("c")])
    assert fw.schedule_pod(pod(node_name="b"), cluster).selected_node == "b"
    failed = fw.schedule_pod(pod(node_name="gone"), cluster)
    assert failed.message() == "0/3 nodes are available: 3 node(s) didn't match the requested node name."
