"""NodeResourcesFit: does the node have room for the pod's requests, and how full would it be.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (Filter) with the scorers in
``resource_allocation.go``, ``least_allocated.go``, ``most_allocated.go`` and
``requested_to_capacity_ratio.go``. Semantics kept exactly:

- Filter: ``Too many pods`` when ``pods on node + 1 > allocatable pods`` (even for pods that request
  nothing); then, for cpu, memory, ephemeral-storage and every scalar resource the pod requests
  (> 0), ``Insufficient <name>`` when ``request > allocatable − requested``. Extended resources in
  ``ignoredResources`` or whose domain is in ``ignoredResourceGroups`` are not checked; hugepages
  are not extended and always checked. All reasons of a node are reported. The status is
  Unschedulable, or UnschedulableAndUnresolvable when some request exceeds the node's whole
  allocatable (v1.35: preemption cannot help there).
- Score: the configured strategy over the configured resources, using the non-zero requests
  (100m / 200Mi defaults) for cpu and memory and actual requests for everything else; a scalar
  resource the pod does not request, and any resource with allocatable 0, drops out.

Unlike upstream, scalar reasons come in the order of the pod's requests, not Go map order.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from ksched.config.types import NodeResourcesFitArgs, ResourceSpec, ScoringStrategy
from ksched.framework import names
from ksched.framework.api import (
    SUCCESS,
    ClusterEventSpec,
    ClusterReader,
    CycleState,
    FilterResult,
    Handle,
    PreFilterResult,
    Scores,
    Status,
    cluster_event,
)
from ksched.framework.batching import RowsAnswer
from ksched.framework.interface import HintFn
from ksched.framework.plugins.noderesources import hints
from ksched.framework.plugins.noderesources.resource_pass import (
    ERR_REASON_TOO_MANY_PODS,
    FitConfig,
    PodSpec,
    ResourcePass,
    shared_pass,
)
from ksched.framework.plugins.noderesources.scoring import STRATEGY_CODES
from ksched.framework.row_delta import RowDelta
from ksched.model.pod import Pod
from ksched.model.resources import CPU

NAME: Final = names.NODE_RESOURCES_FIT
PRE_FILTER_STATE_KEY: Final = f"PreFilter{NAME}"
ERR_REASON_INSUFFICIENT_CPU: Final = "Insufficient cpu"
ERR_REASON_INSUFFICIENT_MEMORY: Final = "Insufficient memory"
ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE: Final = "Insufficient ephemeral-storage"
MAX_CUSTOM_PRIORITY_SCORE: Final = 10
"""Upstream ``config.MaxCustomPriorityScore``: shape scores are 0..10, scaled by 100/10."""
DEFAULT_RESOURCES: Final = (ResourceSpec(name=CPU, weight=1), ResourceSpec(name="memory", weight=1))
DEFAULT_ARGS: Final = NodeResourcesFitArgs(
    scoring_strategy=ScoringStrategy(type="LeastAllocated", resources=DEFAULT_RESOURCES)
)

__all__ = [
    "DEFAULT_ARGS",
    "ERR_REASON_INSUFFICIENT_CPU",
    "ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE",
    "ERR_REASON_INSUFFICIENT_MEMORY",
    "ERR_REASON_TOO_MANY_PODS",
    "NAME",
    "Fit",
    "fit_config",
    "new_fit",
]


def fit_config(args: NodeResourcesFitArgs) -> FitConfig:
    """Turn validated args into kernel inputs; unknown strategies and empty shapes fail here."""
    strategy = args.scoring_strategy
    code = STRATEGY_CODES.get(strategy.type)
    if code is None:
        raise ValueError(f"scoring strategy {strategy.type} is not supported")
    if not strategy.resources:
        raise ValueError("NodeResourcesFit scoring strategy lists no resources")
    scale = 100 // MAX_CUSTOM_PRIORITY_SCORE
    if strategy.type == "RequestedToCapacityRatio" and not strategy.shape:
        raise ValueError("RequestedToCapacityRatio needs at least one shape point")
    shape_u = np.array([p.utilization for p in strategy.shape], dtype=np.int64)
    shape_s = np.array([p.score * scale for p in strategy.shape], dtype=np.int64)
    shape_u.flags.writeable = False
    shape_s.flags.writeable = False
    return FitConfig(
        ignored_resources=frozenset(args.ignored_resources),
        ignored_groups=frozenset(args.ignored_resource_groups),
        strategy=code,
        resources=tuple((r.name, r.weight or 1) for r in strategy.resources),
        shape_u=shape_u,
        shape_s=shape_s,
    )


def _quantity(name: str, value: int) -> str:
    return f"{value}m" if name == CPU else str(value)


class Fit:
    """PreFilter + Filter + PreScore + Score over every node, through the shared :class:`ResourcePass`.

    ``scores_in_range`` is refreshed by every :meth:`score` call: it is False only when int64
    arithmetic wrapped around (allocatable beyond ~9.2e16) and a score left 0..100, so the runtime
    then performs upstream's range check and reports the same error upstream would.
    """

    name = NAME

    def __init__(self, resource_pass: ResourcePass) -> None:
        self._pass = resource_pass
        self.scores_in_range = True

    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        state.data[PRE_FILTER_STATE_KEY] = self._pass.cycle_spec(state, pod, cluster)
        return None, SUCCESS

    def _spec(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> PodSpec:
        spec: PodSpec | None = state.data.get(PRE_FILTER_STATE_KEY)
        return spec if spec is not None else self._pass.cycle_spec(state, pod, cluster)

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        res = self._pass.result(state, pod, cluster)
        bits = res.bits
        if bits is None or res.failing_rows == 0:
            return FilterResult(None, passed=res.passed, n_passed=res.n_passed)
        spec = self._spec(state, pod, cluster)
        return FilterResult(bits, spec.reasons, spec.codes, res.passed, res.n_passed)

    def filter_rows(
        self, state: CycleState, pod: Pod, cluster: ClusterReader, added: RowDelta
    ) -> FilterResult:
        """:meth:`filter` on ``added.rows`` only, with ``added``'s pods counted there; ``failed`` is
        aligned with those rows (the nominated-pods pass; see ``framework.nominated_pass``)."""
        bits = self._pass.bits_on_rows(state, pod, cluster, added)
        if bits is None or not bits.any():
            return FilterResult.all_pass()
        spec = self._spec(state, pod, cluster)
        return FilterResult(bits, spec.reasons, spec.codes)

    def filter_rows_key(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> object:
        """What :meth:`filter_rows` reads of the pod: its kernel inputs, one object per request
        shape and table layout, so pods of the same shape share the nominated-pods pass's answer."""
        return self._pass.cycle_spec(state, pod, cluster)

    def batch_rows(self, state: CycleState, pod: Pod, cluster: ClusterReader, rows: np.ndarray) -> RowsAnswer:
        """Filter and Score on ``rows`` only (opportunistic batching, ``framework.batching``)."""
        res = self._pass.on_rows(state, pod, cluster, rows)
        return RowsAnswer(res.passed, res.fit, res.fit_in_range)

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Status:
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        res = self._pass.result(state, pod, cluster)
        assert res.fit is not None  # the pass always computes the Fit score when Fit is attached
        self.scores_in_range = res.fit_in_range
        return res.fit

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints and InPlacePodVerticalScaling on: a pod
        going away or scaling down frees room, a node added or grown offers it (no
        UpdateNodeTaint / UpdateNodeLabel: those stand in for a missed Node/Add only without
        queueing hints)."""
        return {
            cluster_event("Pod", "Delete", "UpdatePodScaleDown"): hints.after_pod_event,
            cluster_event("Node", "Add", "UpdateNodeAllocatable"): hints.after_node_change,
        }

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str:
        """Per failing resource, e.g. ``cpu: requested 2500m, free 1000m of 4000m``."""
        nodes = cluster.nodes
        spec = self._pass.spec(pod, cluster)
        parts: list[str] = []
        count, allowed = int(nodes.pod_count[row]), int(nodes.allowed_pods[row])
        if count + 1 > allowed:
            parts.append(f"pods: {count} of {allowed} in use")
        for j, name in enumerate(spec.fnames):
            col = int(spec.fcols[j])
            alloc = int(nodes.allocatable[row, col]) if col >= 0 else 0
            used = int(nodes.requested[row, col]) if col >= 0 else 0
            want = int(spec.fpod[j])
            if want > alloc - used:
                parts.append(
                    f"{name}: requested {_quantity(name, want)}, free {_quantity(name, alloc - used)} "
                    f"of {_quantity(name, alloc)}"
                )
        return "; ".join(parts)


def new_fit(args: NodeResourcesFitArgs | None, handle: Handle) -> Fit:
    """Factory: ``args=None`` means upstream's defaults (LeastAllocated over cpu:1, memory:1)."""
    config = fit_config(args if args is not None else DEFAULT_ARGS)
    resource_pass = shared_pass(handle.shared)
    resource_pass.attach_fit(config)
    return Fit(resource_pass)
