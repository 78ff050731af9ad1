"""What one scheduling cycle decided and why (:class:`CycleResult`), and upstream's rule for how
many feasible nodes to look for when ``percentageOfNodesToScore`` is set."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ksched.framework.interface import Code, CycleState, FilterResult, Scores, Status
from ksched.framework.messages import fit_error_message
from ksched.model.pod import Pod

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """Upstream ``numFeasibleNodesToFind``: how many feasible nodes to look for before scoring."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class PluginScores:
    """One score plugin's output for the cycle (normalized, before weight)."""

    plugin: str
    weight: int
    scores: Scores


@dataclass(slots=True)
class CycleResult:
    """What one cycle decided and why."""

    pod: Pod
    profile: str
    num_all_nodes: int
    status: Status
    selected_row: int = -1
    selected_node: str | None = None
    feasible: np.ndarray | None = None
    valid: np.ndarray | None = None
    """Rows that held a node when the cycle ran."""
    prefilter_rejection: Status | None = None
    filters: list[tuple[str, FilterResult]] = field(default_factory=list)
    scores: list[PluginScores] = field(default_factory=list)
    state: CycleState | None = None
    """The cycle's state, handed on to the Reserve / Permit / PreBind / PostBind plugins."""
    _total: Scores | None = None
    _parts: tuple[list[np.ndarray], list[int], int, int] | None = None

    @property
    def total(self) -> Scores | None:
        """Weighted sum of the scores (int when every plugin scored uniformly), None before Score.

        Built on first read when the cycle chose its node from a precomputed :class:`BestRows`
        and never needed the sum itself.
        """
        if self._total is None and self._parts is not None:
            self._total = weighted_sum(*self._parts)
            self._parts = None
        return self._total

    @total.setter
    def total(self, value: Scores | None) -> None:
        self._total = value
        self._parts = None

    def defer_total(self, arrays: list[np.ndarray], weights: list[int], const: int, n: int) -> None:
        """Keep the parts of the weighted sum instead of the sum: :attr:`total` builds it on first
        read (the cycle chose its node without it)."""
        self._total = None
        self._parts = (arrays, weights, const, n)

    @property
    def feasible_count(self) -> int:
        return 0 if self.feasible is None else int(np.count_nonzero(self.feasible))

    def first_failure(self, row: int) -> tuple[str, list[str], Code] | None:
        """(plugin, reasons, code) of the first filter that rejected ``row``, in configured order."""
        if self.prefilter_rejection is not None:
            s = self.prefilter_rejection
            return s.plugin, list(s.reasons), s.code
        for plugin, result in self.filters:
            reasons, code = result.reasons_at(row)
            if reasons:
                return plugin, reasons, code
        return None

    def message(self) -> str:
        """Upstream's FitError text (``0/N nodes are available: ...``), or the error message."""
        if self.status.code == Code.ERROR or self.num_all_nodes == 0:
            return self.status.message
        return fit_error_message(self)


def weighted_sum(arrays: list[np.ndarray], weights: list[int], const: int, n: int) -> np.ndarray:
    """``sum(w * s[:n]) + const`` as a new int64-wrapping array, allocating one array in the common case."""
    first, w0 = arrays[0][:n], weights[0]
    if w0 == 1:
        total = first + const
    else:
        total = first * w0
        if const:
            total += const
    for scores, weight in zip(arrays[1:], weights[1:], strict=True):
        total += scores[:n] if weight == 1 else scores[:n] * weight
    return total
