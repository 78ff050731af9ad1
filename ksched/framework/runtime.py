"""The scheduling cycle for one profile: PreFilter → Filter → PreScore → Score → Normalize → select.

Everything is evaluated across all nodes at once. The cycle reads the cache's live arrays (the
scheduling thread is the only writer, so nothing changes under it) and returns a
:class:`CycleResult` that holds enough to build upstream's failure message or, for ``ksched
explain``, the full picture of every plugin on every node.

Differences from upstream that do not change decisions: filters run on every node (no early stop
unless ``percentageOfNodesToScore`` is set), and the first failing plugin of a node is worked out
afterwards from the per-plugin bitsets, in configured order, which is what upstream's per-node
loop reports.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels
from ksched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Code,
    CycleState,
    FilterPlugin,
    FilterResult,
    NormalizeScorePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Scores,
    Status,
)
from ksched.framework.messages import fit_error_message
from ksched.model.pod import Pod

log = logging.getLogger(__name__)

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
    total: Scores | None = None

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


class Framework:
    """One profile's plugins, in order, with score weights; runs cycles against a cache."""

    def __init__(
        self,
        profile: str,
        *,
        pre_filter: Sequence[PreFilterPlugin] = (),
        filters: Sequence[FilterPlugin] = (),
        pre_score: Sequence[PreScorePlugin] = (),
        scores: Sequence[tuple[ScorePlugin, int]] = (),
        percentage_of_nodes_to_score: int | None = None,
        rng: np.random.Generator | None = None,
        plugins: Sequence[object] = (),
    ) -> None:
        self.profile = profile
        self.pre_filter_plugins = list(pre_filter)
        self.filter_plugins = list(filters)
        self.pre_score_plugins = list(pre_score)
        self.score_plugins = list(scores)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng if rng is not None else np.random.default_rng()
        self.plugins = {getattr(p, "name", repr(p)): p for p in plugins}
        self._normalizers = {p.name: p for p, _ in self.score_plugins if isinstance(p, NormalizeScorePlugin)}

    # ------------------------------------------------------------------ the cycle
    def run(self, pod: Pod, cluster: ClusterCache, *, explain: bool = False) -> CycleResult:
        """Run one scheduling cycle for ``pod``. ``explain`` keeps every plugin's scores."""
        nodes = cluster.nodes
        num_all = len(nodes)
        result = CycleResult(pod, self.profile, num_all, Status())
        if num_all == 0:
            result.status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("no nodes available to schedule pods",)
            )
            return result
        state = CycleState()
        n = nodes.n_rows
        # One snapshot of the valid rows; ``feasible`` starts as the same array and is copied only
        # when something narrows it (most cycles on a healthy cluster never do).
        valid = nodes.valid[:n].copy()
        result.valid = valid
        feasible = valid

        # PreFilter
        allowed: frozenset[str] | None = None
        allowing_plugins: list[str] = []
        rejection: Status | None = None
        for plugin in self.pre_filter_plugins:
            try:
                pfr, status = plugin.pre_filter(state, pod, cluster)
            except Exception as exc:  # a plugin bug must not take the scheduler down
                log.exception("PreFilter plugin %s failed on %s", plugin.name, pod.key)
                result.status = Status(
                    Code.ERROR, (f'running PreFilter plugin "{plugin.name}": {exc}',), plugin.name
                )
                return result
            if status.code == Code.SKIP:
                state.skip_filter.add(plugin.name)
                continue
            if status.code == Code.ERROR:
                result.status = status.with_plugin(plugin.name)
                return result
            if status.code.is_rejection:
                if rejection is None:
                    rejection = status.with_plugin(plugin.name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    break
                continue
            if pfr is not None and pfr.node_names is not None:
                allowing_plugins.append(plugin.name)
                allowed = pfr.node_names if allowed is None else allowed & pfr.node_names
        if rejection is None and allowed is not None and not allowed:
            if len(allowing_plugins) == 1:
                msg = f"node(s) didn't satisfy plugin {allowing_plugins[0]}"
            else:
                msg = f"node(s) didn't satisfy plugin(s) [{' '.join(allowing_plugins)}] simultaneously"
            rejection = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), allowing_plugins[0])
        if rejection is not None:
            result.prefilter_rejection = rejection
            result.status = rejection
            result.feasible = np.zeros(n, dtype=np.bool_)
            return result
        if allowed is not None:
            keep = np.zeros(n, dtype=np.bool_)
            for name in allowed:
                row = nodes.row_of.get(name)
                if row is not None:
                    keep[row] = True
            outside = feasible & ~keep
            reason = f"node(s) didn't satisfy plugin(s) [{' '.join(allowing_plugins)}]"
            result.filters.append(
                (
                    allowing_plugins[0],
                    FilterResult.from_mask(outside, reason, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                )
            )
            feasible = feasible & keep

        # Filter
        count = -1  # feasible rows, once something has counted them
        skip_filter = state.skip_filter
        for plugin in self.filter_plugins:
            if plugin.name in skip_filter:
                continue
            try:
                fr = plugin.filter(state, pod, cluster)
            except Exception as exc:
                log.exception("Filter plugin %s failed on %s", plugin.name, pod.key)
                result.status = Status(
                    Code.ERROR, (f'running "{plugin.name}" filter plugin: {exc}',), plugin.name
                )
                return result
            if fr.failed is not None:
                result.filters.append((plugin.name, fr))
                if feasible is valid:
                    feasible = valid.copy()
                count = kernels.drop_failed(feasible, fr.failed, n)
        if feasible is valid:
            feasible = valid.copy()  # callers may mutate result.feasible; result.valid must not change
        result.feasible = feasible
        if count < 0:
            count = int(np.count_nonzero(feasible))
        if count == 0:
            result.status = Status(Code.UNSCHEDULABLE)
            return result

        # Nominated node first: if it passes, it is the only candidate.
        nominated = nodes.row_of.get(pod.nominated_node_name) if pod.nominated_node_name else None
        if nominated is not None and feasible[nominated] and not explain:
            return self._select(result, nominated, nodes)

        if self.percentage_of_nodes_to_score is not None and self.score_plugins:
            limit = num_feasible_nodes_to_find(num_all, self.percentage_of_nodes_to_score)
            if count > limit:
                rows = np.flatnonzero(feasible)
                start = int(self.rng.integers(rows.size))
                chosen = np.roll(rows, -start)[:limit]
                feasible = np.zeros(n, dtype=np.bool_)
                feasible[chosen] = True
                count = limit
        if count == 1 and not explain:
            return self._select(result, int(np.flatnonzero(feasible)[0]), nodes)

        # PreScore
        for plugin in self.pre_score_plugins:
            try:
                status = plugin.pre_score(state, pod, cluster, feasible)
            except Exception as exc:
                log.exception("PreScore plugin %s failed on %s", plugin.name, pod.key)
                result.status = Status(
                    Code.ERROR, (f'running PreScore plugin "{plugin.name}": {exc}',), plugin.name
                )
                return result
            if status.code == Code.SKIP:
                state.skip_score.add(plugin.name)
            elif not status.ok:
                result.status = status.with_plugin(plugin.name)
                return result

        # Score, NormalizeScore, weighted sum: uniform (int) scores are summed apart and added once,
        # instead of each allocating a new total array.
        arrays: list[np.ndarray] = []
        weights: list[int] = []
        const = 0
        skip_score = state.skip_score
        for plugin, weight in self.score_plugins:
            if plugin.name in skip_score:
                continue
            try:
                raw = plugin.score(state, pod, cluster, feasible)
                norm = self._normalizers.get(plugin.name)
                scores = norm.normalize_score(state, pod, raw, feasible) if norm is not None else raw
            except Exception as exc:
                log.exception("Score plugin %s failed on %s", plugin.name, pod.key)
                result.status = Status(
                    Code.ERROR, (f'running Score plugin "{plugin.name}": {exc}',), plugin.name
                )
                return result
            if not getattr(plugin, "scores_in_range", False):
                bad = _out_of_range(scores, feasible)
                if bad is not None:
                    msg = (
                        f'plugin "{plugin.name}" returns an invalid score {bad}, '
                        "it should in the range of [0, 100] after normalizing"
                    )
                    result.status = Status(Code.ERROR, (msg,), plugin.name)
                    return result
            if explain:
                result.scores.append(PluginScores(plugin.name, weight, scores))
            if isinstance(scores, np.ndarray):
                arrays.append(scores)
                weights.append(weight)
            else:
                const += int(scores) * weight
        u = float(self.rng.random())
        if arrays:
            total = _weighted_sum(arrays, weights, const, n)
            result.total = total
            row = kernels.select_best(total, feasible, u)
        else:
            result.total = const if self.score_plugins else 1
            row = kernels.nth_true_ref(feasible, u)
        result.feasible = feasible
        return self._select(result, row, nodes)

    @staticmethod
    def _select(result: CycleResult, row: int, nodes: object) -> CycleResult:
        result.selected_row = row
        result.selected_node = nodes.node(row).name  # type: ignore[attr-defined]
        result.status = Status()
        return result


def _weighted_sum(arrays: list[np.ndarray], weights: list[int], const: int, n: int) -> np.ndarray:
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


def _out_of_range(scores: Scores, feasible: np.ndarray) -> int | None:
    if isinstance(scores, np.ndarray):
        n = feasible.shape[0]
        lo = int(np.min(scores[:n], where=feasible, initial=MAX_NODE_SCORE))
        hi = int(np.max(scores[:n], where=feasible, initial=MIN_NODE_SCORE))
        if lo < MIN_NODE_SCORE:
            return lo
        if hi > MAX_NODE_SCORE:
            return hi
        return None
    value = int(scores)
    return value if not MIN_NODE_SCORE <= value <= MAX_NODE_SCORE else None
