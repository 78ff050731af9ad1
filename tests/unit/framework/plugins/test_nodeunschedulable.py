"""NodeUnschedulable, ported from upstream
``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go`` (TestNodeUnschedulable,
3 cases), plus toleration variants and a run through the framework."""

from __future__ import annotations

import pytest

from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable, new
from ksched.framework.runtime import Framework
from tests.builders import cluster_of, make_node, pod

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "rejected"),
    [
        pytest.param(
            [], True, True, id="Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"
        ),
        pytest.param([], False, False, id="Schedule pod to normal node"),
        pytest.param(
            [{"key": UNSCHEDULABLE_KEY, "effect": "NoSchedule"}],
            True,
            False,
            id="Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        ),
        pytest.param([{"operator": "Exists"}], True, False, id="a tolerate-everything toleration also works"),
        pytest.param(
            [{"key": UNSCHEDULABLE_KEY, "effect": "NoExecute"}],
            True,
            True,
            id="a toleration for another effect does not",
        ),
    ],
)
def test_node_unschedulable(tolerations: list[dict[str, str]], unschedulable: bool, rejected: bool) -> None:
    cluster = cluster_of([make_node("n", unschedulable=unschedulable)])
    reasons, code = (
        NodeUnschedulable().filter(CycleState(), pod(tolerations=tolerations), cluster).reasons_at(0)
    )
    if rejected:
        assert reasons == [ERR_REASON_UNSCHEDULABLE] == ["node(s) were unschedulable"]
        assert code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    else:
        assert reasons == []


def test_framework_run() -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    fw = Framework("default-scheduler", filters=[plugin])
    cluster = cluster_of([make_node("cordoned", unschedulable=True), make_node("open")])
    assert fw.schedule_pod(pod(), cluster).selected_node == "open"
    cluster.remove_node("open")
    assert (
        fw.schedule_pod(pod(), cluster).message() == "0/1 nodes are available: 1 node(s) were unschedulable."
    )
