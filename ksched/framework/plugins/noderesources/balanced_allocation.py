"""NodeResourcesBalancedAllocation: prefer nodes whose resources would be used evenly.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go``. Uses actual
requests (no 100m / 200Mi defaults) of the node plus the pod; per resource with allocatable > 0
the fraction ``requested / allocatable`` capped at 1; score ``int64((1 − std) × 100)``. Since
v1.33 PreScore returns Skip for a pod whose actual requests of all configured resources are 0
(a best-effort pod), so the plugin adds nothing to any node (kubernetes/kubernetes#129138).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from ksched.config.types import NodeResourcesBalancedAllocationArgs, ResourceSpec
from ksched.framework import names
from ksched.framework.api import (
    SKIP,
    SUCCESS,
    ClusterEventSpec,
    ClusterReader,
    CycleState,
    Handle,
    Scores,
    Status,
)
from ksched.framework.batching import RowsAnswer
from ksched.framework.interface import HintFn
from ksched.framework.plugins.noderesources.resource_pass import ResourcePass, shared_pass
from ksched.model.pod import Pod

NAME: Final = names.NODE_RESOURCES_BALANCED_ALLOCATION
DEFAULT_ARGS: Final = NodeResourcesBalancedAllocationArgs(
    resources=(ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1))
)

__all__ = ["DEFAULT_ARGS", "NAME", "BalancedAllocation", "new_balanced_allocation"]


class BalancedAllocation:
    """PreScore (best-effort skip) + Score; the sweep is shared with NodeResourcesFit when both run.

    ``scores_in_range`` is refreshed by every :meth:`score` (False only after int64 wrap-around).
    """

    name = NAME

    def __init__(self, resource_pass: ResourcePass) -> None:
        self._pass = resource_pass
        self.scores_in_range = True

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Status:
        return SKIP if self._pass.cycle_spec(state, pod, cluster).best_effort else SUCCESS

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        res = self._pass.result(state, pod, cluster)
        if res.balanced is None:
            return 0  # best-effort pod scored without PreScore: upstream's Score returns 0 too
        self.scores_in_range = res.balanced_in_range
        return res.balanced

    def batch_rows(self, state: CycleState, pod: Pod, cluster: ClusterReader, rows: np.ndarray) -> RowsAnswer:
        """Score on ``rows`` only (opportunistic batching, ``framework.batching``)."""
        res = self._pass.on_rows(state, pod, cluster, rows)
        return RowsAnswer(None, res.balanced, res.balanced_in_range)

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """None: upstream's plugin has no EventsToRegister, and a Score plugin rejects no pod, so
        no event needs to move one back."""
        return {}


def new_balanced_allocation(
    args: NodeResourcesBalancedAllocationArgs | None, handle: Handle
) -> BalancedAllocation:
    """Factory: ``args=None`` means upstream's defaults (cpu and memory)."""
    resources = (args if args is not None else DEFAULT_ARGS).resources
    if not resources:
        raise ValueError("NodeResourcesBalancedAllocation lists no resources")
    resource_pass = shared_pass(handle.shared)
    resource_pass.attach_balanced(tuple(r.name for r in resources))
    return BalancedAllocation(resource_pass)
