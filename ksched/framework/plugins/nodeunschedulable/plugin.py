"""NodeUnschedulable filter over every node at once."""

from __future__ import annotations

from typing import Any, Final

from ksched.framework import names
from ksched.framework.api import (
    ClusterEventSpec,
    ClusterReader,
    Code,
    CycleState,
    FilterResult,
    Handle,
    cluster_event,
)
from ksched.framework.interface import HintFn
from ksched.framework.plugins.nodeunschedulable import hints
from ksched.framework.plugins.nodeunschedulable.hints import UNSCHEDULABLE_TAINT
from ksched.model.pod import Pod

NAME: Final = names.NODE_UNSCHEDULABLE
ERR_REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"


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

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: a new or uncordoned node (reported
        as UpdateNodeTaint), or a new toleration of the pod itself."""
        return {
            cluster_event("Node", "Add", "UpdateNodeTaint"): hints.after_node_change,
            cluster_event("Pod", "UpdatePodToleration"): hints.after_pod_toleration_change,
        }


def new(args: Any, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
