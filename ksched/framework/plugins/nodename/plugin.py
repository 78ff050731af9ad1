"""NodeName filter over every node at once."""

from __future__ import annotations

from typing import Any, Final

import numpy as np

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
from ksched.model.pod import Pod

NAME: Final = names.NODE_NAME
ERR_REASON: Final = "node(s) didn't match the requested node name"


class NodeName:
    """Passes every node when ``spec.nodeName`` is empty, else only the node of that name."""

    name = NAME

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        if not pod.node_name:
            return FilterResult.all_pass()
        nodes = cluster.nodes
        fails = np.ones(nodes.n_rows, dtype=np.bool_)
        row = nodes.row_of.get(pod.node_name)
        if row is not None:
            fails[row] = False
        return FilterResult.from_mask(fails, ERR_REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: only a new node can be the named
        one. No hint function: upstream retries the pod on every Node/Add, as Queue would."""
        return {cluster_event("Node", "Add"): None}


def new(args: Any, handle: Handle) -> NodeName:
    return NodeName()
