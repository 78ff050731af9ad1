"""The one sweep over the node table that NodeResourcesFit and BalancedAllocation share.

Both plugins read the same columns (allocatable, requested, non-zero requested) of the same rows,
so when a profile enables both, their factories attach to one :class:`ResourcePass` kept in
``handle.shared``; the first plugin that needs a result in a cycle runs one kernel computing the
Fit failure bits, the Fit score and the BalancedAllocation score for every row, and memoizes it in
the cycle's :class:`CycleState`. Either plugin alone still works: the pass then computes only the
parts that are attached.

Results are computed when Fit's Filter runs, i.e. before the runtime knows which rows are
feasible; scores at infeasible rows are computed but ignored, which costs less than a second sweep.

The pod-dependent inputs (which columns to check, the pod's requests per column) are a
:class:`PodSpec`, built in Python once per distinct request shape and cached, because building it
costs more than the sweep itself on a small cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from ksched.framework import kernels, names
from ksched.framework.api import ClusterReader
from ksched.framework.best_rows import BestRows
from ksched.framework.interface import Code, CycleState
from ksched.framework.kernels import (
    MAX_FILTER_RESOURCES,
    REQUESTED_TO_CAPACITY_RATIO,
    SRC_NONZERO_CPU,
    SRC_NONZERO_MEMORY,
    SRC_REQUESTED,
    FusedPass,
)
from ksched.framework.plugins.noderesources.scoring import fused_pass_ref, pack_spec
from ksched.framework.row_delta import RowDelta
from ksched.model.pod import Pod
from ksched.model.resources import CPU, EPHEMERAL_STORAGE, FIXED_COLUMNS, MEMORY, is_extended, is_hugepages

SHARED_KEY: Final = "noderesources.ResourcePass"
STATE_KEY: Final = f"{names.NODE_RESOURCES_FIT}.resources"
SPEC_STATE_KEY: Final = f"{names.NODE_RESOURCES_FIT}.spec"
ROWS_STATE_KEY: Final = f"{names.NODE_RESOURCES_FIT}.rows"
SPEC_CACHE_SIZE: Final = 512
ERR_REASON_TOO_MANY_PODS: Final = "Too many pods"
_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY.flags.writeable = False


def is_scalar(name: str) -> bool:
    """Upstream ``IsScalarResourceName``: extended, hugepages, ``*kubernetes.io/*`` or attachable volumes.

    Only these (besides cpu, memory, ephemeral-storage) exist in upstream's NodeInfo resources; any
    other name is invisible to both Filter and Score.
    """
    return (
        is_extended(name)
        or is_hugepages(name)
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )


def insufficient(name: str) -> str:
    """Upstream's ``fmt.Sprintf("Insufficient %v", rName)``."""
    return f"Insufficient {name}"


def _arr(values: list[int]) -> np.ndarray:
    out = np.array(values, dtype=np.int64) if values else _EMPTY
    out.flags.writeable = False
    return out


@dataclass(frozen=True, slots=True)
class FitConfig:
    """NodeResourcesFit's validated args, in the shapes the kernel wants."""

    ignored_resources: frozenset[str]
    ignored_groups: frozenset[str]
    strategy: int
    resources: tuple[tuple[str, int], ...]
    shape_u: np.ndarray
    shape_s: np.ndarray
    """Shape scores already multiplied by 10 (``MaxNodeScore / MaxCustomPriorityScore``)."""


@dataclass(frozen=True, slots=True)
class PodSpec:
    """One pod's kernel inputs, per plugin part (see ``ksched/_fast/kernels.pxd``)."""

    fcols: np.ndarray
    fpod: np.ndarray
    fnames: tuple[str, ...]
    """Resource checked by filter slot j (for explain)."""
    reasons: tuple[str, ...]
    codes: tuple[Code, ...]
    scols: np.ndarray
    ssrc: np.ndarray
    spod: np.ndarray
    sw: np.ndarray
    bcols: np.ndarray
    bpod: np.ndarray
    best_effort: bool
    """All of the pod's actual requests for BalancedAllocation's resources are 0: it skips."""
    packed: np.ndarray
    """Everything above that the kernel reads, in one array (``scoring.pack_spec``)."""


class ResourcePass:
    """Builds pod specs and runs the fused kernel for whichever of the two plugins attached."""

    def __init__(self) -> None:
        self.fit: FitConfig | None = None
        self.balanced: tuple[str, ...] | None = None
        self._specs: dict[tuple[Any, ...], PodSpec] = {}

    def attach_fit(self, config: FitConfig) -> None:
        self.fit = config
        self._specs.clear()

    def attach_balanced(self, resources: tuple[str, ...]) -> None:
        self.balanced = resources
        self._specs.clear()

    # ------------------------------------------------------------------ pod specs
    def spec(self, pod: Pod, cluster: ClusterReader) -> PodSpec:
        """The pod's kernel inputs; cached by request shape and the cluster's column layout."""
        width = cluster.nodes.allocatable.shape[1]
        key = (
            tuple(pod.requests.items()),
            pod.nonzero_cpu,
            pod.nonzero_memory,
            len(cluster.resources),
            width,
        )
        spec = self._specs.get(key)
        if spec is None:
            if len(self._specs) >= SPEC_CACHE_SIZE:
                self._specs.clear()
            spec = self._build(pod, cluster, width)
            self._specs[key] = spec
        return spec

    def _column(self, cluster: ClusterReader, name: str, width: int) -> int:
        col = cluster.resources.get(name)
        return -1 if col is None or col >= width else col

    def _build(self, pod: Pod, cluster: ClusterReader, width: int) -> PodSpec:
        """The kernel's inputs for pods of ``pod``'s request shape: what Fit checks, what it
        scores, what BalancedAllocation weighs."""
        fcols, fpod, fnames, reasons, codes = self._fit_columns(pod, cluster, width)
        scols, ssrc, spod, sw = self._score_columns(pod, cluster, width)
        bcols, bpod, best_effort = self._balanced_columns(pod, cluster, width)
        fit = self.fit
        do_fit = fit is not None
        packed = pack_spec(
            do_fit, _arr(fcols), _arr(fpod),
            do_fit, _arr(scols), _arr(ssrc), _arr(spod), _arr(sw),
            fit.strategy if fit is not None else 0,
            fit.shape_u if fit is not None else _EMPTY,
            fit.shape_s if fit is not None else _EMPTY,
            self.balanced is not None and not best_effort, _arr(bcols), _arr(bpod),
        )  # fmt: skip
        return PodSpec(
            _arr(fcols),
            _arr(fpod),
            tuple(fnames),
            tuple(reasons),
            tuple(codes),
            _arr(scols),
            _arr(ssrc),
            _arr(spod),
            _arr(sw),
            _arr(bcols),
            _arr(bpod),
            best_effort,
            packed,
        )

    def _fit_columns(
        self, pod: Pod, cluster: ClusterReader, width: int
    ) -> tuple[list[int], list[int], list[str], list[str], list[Code]]:
        """(columns, requests, names, reasons, codes) of the resources Fit's filter checks."""
        requests = pod.requests
        fcols: list[int] = []
        fpod: list[int] = []
        fnames: list[str] = []
        reasons: list[str] = [ERR_REASON_TOO_MANY_PODS]
        codes: list[Code] = [Code.UNSCHEDULABLE]

        def check(name: str, value: int) -> None:
            fcols.append(self._column(cluster, name, width))
            fpod.append(value)
            fnames.append(name)
            reasons.extend((insufficient(name), insufficient(name)))
            codes.extend((Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))

        fit = self.fit
        if fit is None:
            return fcols, fpod, fnames, reasons, codes
        for name in FIXED_COLUMNS:
            value = requests.get(name, 0)
            if value > 0:
                check(name, value)
        for name, value in requests.items():
            if name in FIXED_COLUMNS or value <= 0 or not is_scalar(name):
                continue
            ignored = name in fit.ignored_resources or name.split("/", 1)[0] in fit.ignored_groups
            if is_extended(name) and ignored:
                continue
            check(name, value)
        if len(fcols) > MAX_FILTER_RESOURCES:
            raise ValueError(
                f"pod {pod.key} requests {len(fcols)} resources; NodeResourcesFit checks at most "
                f"{MAX_FILTER_RESOURCES} per pod"
            )
        return fcols, fpod, fnames, reasons, codes

    def _score_columns(
        self, pod: Pod, cluster: ClusterReader, width: int
    ) -> tuple[list[int], list[int], list[int], list[int]]:
        """(columns, sources, requests, weights) of the resources Fit's score weighs."""
        requests = pod.requests
        scols: list[int] = []
        ssrc: list[int] = []
        spod: list[int] = []
        sw: list[int] = []
        if self.fit is None:
            return scols, ssrc, spod, sw
        for name, weight in self.fit.resources:
            if name == CPU:
                scols.append(0), ssrc.append(SRC_NONZERO_CPU), spod.append(pod.nonzero_cpu)
            elif name == MEMORY:
                scols.append(1), ssrc.append(SRC_NONZERO_MEMORY), spod.append(pod.nonzero_memory)
            elif name == EPHEMERAL_STORAGE:
                scols.append(2), ssrc.append(SRC_REQUESTED), spod.append(requests.get(name, 0))
            else:
                value = requests.get(name, 0)
                col = self._column(cluster, name, width)
                if value == 0 or col < 0 or not is_scalar(name):
                    continue  # upstream returns (0, 0): the resource drops out
                scols.append(col), ssrc.append(SRC_REQUESTED), spod.append(value)
            sw.append(weight)
        return scols, ssrc, spod, sw

    def _balanced_columns(
        self, pod: Pod, cluster: ClusterReader, width: int
    ) -> tuple[list[int], list[int], bool]:
        """(columns, requests, best effort) of BalancedAllocation's resources; best effort: the
        pod requests none of them."""
        requests = pod.requests
        bcols: list[int] = []
        bpod: list[int] = []
        best_effort = True
        if self.balanced is None:
            return bcols, bpod, best_effort
        for name in self.balanced:
            value = requests.get(name, 0)
            if value != 0:
                best_effort = False
            if name in FIXED_COLUMNS:
                bcols.append(FIXED_COLUMNS.index(name)), bpod.append(value)
                continue
            col = self._column(cluster, name, width)
            if value == 0 or col < 0 or not is_scalar(name):
                continue
            bcols.append(col), bpod.append(value)
        return bcols, bpod, best_effort

    def cycle_spec(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> PodSpec:
        """:meth:`spec`, looked up once per cycle: Fit's PreFilter, BalancedAllocation's PreScore
        and the sweep all need it, and building the cache key is most of a lookup's cost."""
        spec: PodSpec | None = state.data.get(SPEC_STATE_KEY)
        if spec is None:
            spec = self.spec(pod, cluster)
            state.data[SPEC_STATE_KEY] = spec
        return spec

    # ------------------------------------------------------------------ the sweep
    def result(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FusedPass:
        """This cycle's results, running the fused kernel on first use.

        The kernel also returns the pass mask (handed to the runtime as ``FilterResult.passed``)
        and, weighted with the profile's Score weights of the two plugins, where their summed
        scores peak among the passing rows: left in ``state.best_rows`` so that the runtime can
        skip summing and scanning when nothing else scores per node (see :class:`BestRows`).
        """
        memo: FusedPass | None = state.data.get(STATE_KEY)
        if memo is not None:
            return memo
        spec = self.cycle_spec(state, pod, cluster)
        nodes = cluster.nodes
        weights = state.score_weights
        wf = weights.get(names.NODE_RESOURCES_FIT, 0) if self.fit is not None else 0
        wb = weights.get(names.NODE_RESOURCES_BALANCED_ALLOCATION, 0) if self.balanced is not None else 0
        # Whole arrays and the row count, not ``[:n]`` views: five slices cost more than the checks.
        memo = kernels.fused_pass(
            nodes.allocatable,
            nodes.requested,
            nodes.nonzero_requested,
            nodes.allowed_pods,
            nodes.pod_count,
            nodes.valid,
            nodes.n_rows,
            spec.packed,
            wf,
            wb,
            reference=fused_pass_ref,
        )
        state.data[STATE_KEY] = memo
        if memo.ties:
            arrays: list[np.ndarray] = []
            used: list[int] = []
            if memo.fit is not None and wf:
                arrays.append(memo.fit), used.append(wf)
            if memo.balanced is not None and wb:
                arrays.append(memo.balanced), used.append(wb)
            if arrays:
                state.best_rows = BestRows(
                    tuple(arrays), tuple(used), memo.passed, memo.best, memo.ties, memo.first, memo.last
                )
        return memo

    def bits_on_rows(
        self, state: CycleState, pod: Pod, cluster: ClusterReader, added: RowDelta
    ) -> np.ndarray | None:
        """Fit's failure bits on ``added.rows`` only (aligned with them), with ``added``'s pods
        counted there, never memoized: the nominated-pods pass (``framework.nominated_pass``).
        The same kernel as :meth:`result`, on copies of those rows; None when the pod checks no
        resource."""
        spec = self.cycle_spec(state, pod, cluster)
        extra = added.requested(cluster)  # first: it may widen the node table
        nodes = cluster.nodes
        rows = added.rows
        requested = nodes.requested[rows]
        requested += extra
        nonzero = nodes.nonzero_requested[rows]
        nonzero += added.nonzero
        out = kernels.fused_pass(
            nodes.allocatable[rows],
            requested,
            nonzero,
            nodes.allowed_pods[rows],
            nodes.pod_count[rows] + added.count,
            nodes.valid[rows],
            int(rows.size),
            spec.packed,
            0,
            0,
            reference=fused_pass_ref,
        )
        return out.bits

    def on_rows(self, state: CycleState, pod: Pod, cluster: ClusterReader, rows: np.ndarray) -> FusedPass:
        """The sweep on ``rows`` only (aligned with them), once per cycle and set of rows: what
        opportunistic batching asks of Fit and BalancedAllocation on the rows that changed since
        the cycle it reuses (``framework.batching``)."""
        memo: tuple[np.ndarray, FusedPass] | None = state.data.get(ROWS_STATE_KEY)
        if memo is not None and memo[0] is rows:
            return memo[1]
        spec = self.cycle_spec(state, pod, cluster)
        nodes = cluster.nodes
        out = kernels.fused_pass(
            nodes.allocatable[rows],
            nodes.requested[rows],
            nodes.nonzero_requested[rows],
            nodes.allowed_pods[rows],
            nodes.pod_count[rows],
            nodes.valid[rows],
            int(rows.size),
            spec.packed,
            0,
            0,
            reference=fused_pass_ref,
        )
        state.data[ROWS_STATE_KEY] = (rows, out)
        return out


def shared_pass(shared: dict[str, Any]) -> ResourcePass:
    """The profile's one :class:`ResourcePass` (created by whichever plugin is built first)."""
    found = shared.get(SHARED_KEY)
    if not isinstance(found, ResourcePass):
        found = ResourcePass()
        shared[SHARED_KEY] = found
    return found


__all__ = [
    "ERR_REASON_TOO_MANY_PODS",
    "REQUESTED_TO_CAPACITY_RATIO",
    "FitConfig",
    "PodSpec",
    "ResourcePass",
    "insufficient",
    "is_scalar",
    "shared_pass",
]
