"""NodeUnschedulable filter over every node at once."""

from __future__ import annotations

from typing import Any, Final

from ksched.framework import names
from ksched.framework.api import ClusterReader, Code, CycleState, FilterResult, Handle
from ksched.model.pod import Pod
from ksched.model.selectors import Taint

NAME: Final = names.NODE_UNSCHEDULABLE
ERR_REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable:
    """Fails cordoned nodes unless the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""

    name = NAME

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        nodes = cluster.nodes
        if nodes.unschedulable_count == 0:
            return FilterResult.all_pass()
        if any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return FilterResult.all_pass()
        return FilterResult.from_mask(
            nodes.unschedulable[: nodes.n_rows], ERR_REASON_UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )


def new(args: Any, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
