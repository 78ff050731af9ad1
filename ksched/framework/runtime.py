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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels, names
from ksched.framework.api import PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from ksched.framework.guards import GuardedPlugin
from ksched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SUCCESS,
    BestRows,
    Code,
    CycleState,
    FilterPlugin,
    FilterResult,
    NominatedPods,
    NormalizeScorePlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Scores,
    Status,
)
from ksched.framework.messages import PREEMPTION_PREFIX
from ksched.framework.nominated_pass import NominatedPass
from ksched.framework.plans import Gates
from ksched.framework.relevance import never, relevance
from ksched.framework.result import (
    CycleResult,
    PluginScores,
    num_feasible_nodes_to_find,
    weighted_sum,
)
from ksched.framework.waiting import WaitingPods
from ksched.model.pod import Pod

log = logging.getLogger(__name__)


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
        post_filter: Sequence[PostFilterPlugin] = (),
        percentage_of_nodes_to_score: int | None = None,
        rng: np.random.Generator | None = None,
        plugins: Sequence[object] = (),
        reserve: Sequence[ReservePlugin] = (),
        permit: Sequence[PermitPlugin] = (),
        pre_bind: Sequence[PreBindPlugin] = (),
        post_bind: Sequence[PostBindPlugin] = (),
        waiting_pods: WaitingPods | None = None,
    ) -> None:
        self.profile = profile
        # Binding-cycle points (run by ksched.scheduler.binding_cycle); empty for in-tree profiles.
        self.reserve_plugins = list(reserve)
        self.permit_plugins = list(permit)
        self.pre_bind_plugins = list(pre_bind)
        self.post_bind_plugins = list(post_bind)
        self.has_binding_plugins = bool(reserve or permit or pre_bind or post_bind)
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self.pre_filter_plugins = list(pre_filter)
        self.filter_plugins = list(filters)
        self.pre_score_plugins = list(pre_score)
        self.score_plugins = list(scores)
        self.post_filter_plugins = list(post_filter)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng if rng is not None else np.random.default_rng()
        self.plugins = {getattr(p, "name", repr(p)): p for p in plugins}
        self._normalizers = {p.name: p for p, _ in self.score_plugins if isinstance(p, NormalizeScorePlugin)}
        # Per-profile constants the cycle would otherwise rebuild (or look up) every time.
        self._score_weights: Mapping[str, int] = MappingProxyType({p.name: w for p, w in self.score_plugins})
        self._scorers = [(p, p.name, w, self._normalizers.get(p.name)) for p, w in self.score_plugins]
        self._gates = Gates(
            self.pre_filter_plugins, self.pre_score_plugins, self.filter_plugins, self._scorers
        )
        self._row_local = {p.name: _is_row_local(p) for p in self.filter_plugins}
        self._filter_order = {p.name: i for i, p in enumerate(self.filter_plugins)}
        # The pod of the last filter_pass and whether a non-row-local Filter plugin ran in it.
        self._last_pass: tuple[Pod, bool] | None = None
        self._nominated_pass = NominatedPass(self)
        for p in self.post_filter_plugins:
            attach = getattr(p, "attach_framework", None)
            if attach is not None:
                attach(self)  # preemption re-runs this profile's filters in its dry runs

    # ------------------------------------------------------------------ the cycle
    def run(
        self,
        pod: Pod,
        cluster: ClusterCache,
        *,
        explain: bool = False,
        marks: list[tuple[str, float]] | None = None,
        nominated: NominatedPods | None = None,
        filter_only: bool = False,
        active: list[str] | None = None,
        skipped: frozenset[str] | set[str] = frozenset(),
    ) -> CycleResult:
        """Run one scheduling cycle for ``pod``. ``explain`` keeps every plugin's scores.

        ``nominated``: the queue's nominated pods. A node with nominated pods (other than ``pod``)
        of equal or higher priority passes Filter only if it passes both with them counted as
        running there and without them (upstream ``RunFilterPluginsWithNominatedPods``), so that
        a spot preemption made for another pod is not taken. ``filter_only`` stops after Filter
        (preemption's dry runs); ``active``, when given, receives the names of the Filter
        plugins that ran; ``skipped`` names plugins whose PreFilter said Skip in the cycle this
        pass belongs to: they stay skipped (upstream's nominated-pods pass reuses the cycle's
        state, so adding pods never brings a skipped plugin back).

        ``marks``, when given, receives ``(extension point, perf_counter())`` as each point starts;
        the caller turns them into the extension-point duration metric (on sampled cycles only, as
        upstream does, so the common cycle pays one ``is None`` test per point).
        """
        nodes = cluster.nodes
        num_all = len(nodes)
        result = CycleResult(pod, self.profile, num_all, SUCCESS)
        if num_all == 0:
            result.status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("no nodes available to schedule pods",)
            )
            return result
        plan = self._gates.plan(pod)
        state = CycleState(
            skip_filter=set(plan.skip_filter),
            skip_score=set(plan.skip_score),
            score_weights=self._score_weights,
        )
        result.state = state
        n = nodes.n_rows
        # One snapshot of the valid rows; ``feasible`` starts as the same array and is copied only
        # when something narrows it (most cycles on a healthy cluster never do).
        valid = nodes.valid[:n].copy()
        result.valid = valid
        feasible = valid

        # PreFilter
        if marks is not None:
            marks.append(("PreFilter", time.perf_counter()))
        allowed: frozenset[str] | None = None
        allowing_plugins: list[str] = []
        rejection: Status | None = None
        pre_filters = plan.pre_filter
        if skipped:
            state.skip_filter.update(skipped)
            pre_filters = [p for p in pre_filters if p.name not in skipped]
        timings = result.plugin_timings = [] if marks is not None else None
        for plugin in pre_filters:
            try:
                started = time.perf_counter() if timings is not None else 0.0
                pfr, status = plugin.pre_filter(state, pod, cluster)
                if timings is not None:
                    _timed(timings, plugin, "PreFilter", status.code.label, started)
            except Exception as exc:  # a plugin bug must not take the scheduler down
                log.exception("PreFilter plugin %s failed on %s", plugin.name, pod.key)
                result.status = Status(
                    Code.ERROR, (f'running PreFilter plugin "{plugin.name}": {exc}',), plugin.name
                )
                return result
            if status is SUCCESS and pfr is None:
                continue  # the common case, without the enum comparisons below
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
        if marks is not None:
            marks.append(("Filter", time.perf_counter()))
        count = -1  # feasible rows, once something has counted them
        adopted: np.ndarray | None = None  # a filter's ``passed`` mask, taken over as ``feasible``
        skip_filter = state.skip_filter
        for plugin in plan.filters:
            if plugin.name in skip_filter:
                continue
            if active is not None:
                active.append(plugin.name)
            try:
                started = time.perf_counter() if timings is not None else 0.0
                fr = plugin.filter(state, pod, cluster)
                if timings is not None:
                    _timed(timings, plugin, "Filter", "Success", started)
            except Exception as exc:
                log.exception("Filter plugin %s failed on %s", plugin.name, pod.key)
                result.status = Status(
                    Code.ERROR, (f'running "{plugin.name}" filter plugin: {exc}',), plugin.name
                )
                return result
            if fr.failed is not None:
                result.filters.append((plugin.name, fr))
            if fr.passed is not None and feasible is valid:
                # Nothing narrowed the valid rows yet, so the plugin's pass mask is the answer.
                feasible = adopted = fr.passed
                count = fr.n_passed
            elif fr.failed is not None:
                if feasible is valid or feasible is adopted:
                    feasible = feasible.copy()  # never mutate the plugin's or the snapshot's array
                    adopted = None
                count = kernels.drop_failed(feasible, fr.failed, n)
        if feasible is valid:
            feasible = valid.copy()  # callers may mutate result.feasible; result.valid must not change
        narrowed = None
        if nominated is not None:
            hint = state.best_rows
            if hint is not None and (adopted is None or hint.rows is not adopted):
                hint = None
            narrowed = self._nominated_pass.narrow(pod, cluster, nominated, feasible, result, state, hint)
            if narrowed is not None and narrowed.changed:
                state.best_rows = narrowed.hint
                feasible = narrowed.feasible
                adopted, count = (feasible if narrowed.hint is not None else None), -1
        result.feasible = feasible
        if count < 0:
            count = int(np.count_nonzero(feasible))
        if narrowed is not None and (filter_only or explain or count == 0):
            narrowed.finish()  # the reasons of the pass with nominated pods are read only then
        if filter_only:
            result.status = Status(Code.UNSCHEDULABLE) if count == 0 else SUCCESS
            return result
        if count == 0:
            result.status = Status(Code.UNSCHEDULABLE)
            return result

        # Nominated node first: if it passes, it is the only candidate.
        nominated_row = nodes.row_of.get(pod.nominated_node_name) if pod.nominated_node_name else None
        if nominated_row is not None and feasible[nominated_row] and not explain:
            return self._select(result, nominated_row, nodes)

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
        if marks is not None:
            marks.append(("PreScore", time.perf_counter()))
        for plugin in plan.pre_score:
            try:
                started = time.perf_counter() if timings is not None else 0.0
                status = plugin.pre_score(state, pod, cluster, feasible)
                if timings is not None:
                    _timed(timings, plugin, "PreScore", status.code.label, started)
            except Exception as exc:
                log.exception("PreScore plugin %s failed on %s", plugin.name, pod.key)
                result.status = Status(
                    Code.ERROR, (f'running PreScore plugin "{plugin.name}": {exc}',), plugin.name
                )
                return result
            if status is SUCCESS:
                continue
            if status.code == Code.SKIP:
                state.skip_score.add(plugin.name)
            elif not status.ok:
                result.status = status.with_plugin(plugin.name)
                return result

        # Score, NormalizeScore, weighted sum: uniform (int) scores are summed apart and added once,
        # instead of each allocating a new total array.
        if marks is not None:
            marks.append(("Score", time.perf_counter()))
        arrays: list[np.ndarray] = []
        weights: list[int] = []
        const = 0
        skip_score = state.skip_score
        for plugin, name, weight, norm in plan.scorers:
            if name in skip_score:
                continue
            try:
                if timings is None:
                    raw = plugin.score(state, pod, cluster, feasible)
                    scores = norm.normalize_score(state, pod, raw, feasible) if norm is not None else raw
                else:
                    started = time.perf_counter()
                    raw = plugin.score(state, pod, cluster, feasible)
                    _timed(timings, plugin, "Score", "Success", started)
                    scores = raw
                    if norm is not None:
                        started = time.perf_counter()
                        scores = norm.normalize_score(state, pod, raw, feasible)
                        _timed(timings, plugin, "NormalizeScore", "Success", started)
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
        hint = state.best_rows
        if (
            arrays
            and hint is not None
            and hint.rows is feasible
            and adopted is feasible
            and not explain
            and _hint_covers(hint, arrays, weights, const)
        ):
            # The fused sweep already found the best rows: pick among its ties, sum on demand.
            result._parts = (arrays, weights, const, n)
            row = _pick(hint, u)
        elif arrays:
            total = weighted_sum(arrays, weights, const, n)
            result.total = total
            row = kernels.select_best(total, feasible, u)
        else:
            result.total = const if self.score_plugins else 1
            row = kernels.nth_true_ref(feasible, u)
        result.feasible = feasible
        return self._select(result, row, nodes)

    # ------------------------------------------------------------------ PostFilter
    def run_post_filter(
        self, pod: Pod, cluster: ClusterCache, result: CycleResult, nominated: NominatedPods | None = None
    ) -> PostFilterResult | None:
        """Run the PostFilter plugins (preemption) after a cycle that found no feasible node.

        Returns None when the profile has none. Like upstream, the first plugin whose result is not
        "Unschedulable" decides; otherwise the rejections are merged: the last result that sets the
        nomination, and the messages. The status names the plugin whose message it carries (pass it
        to :func:`~ksched.framework.messages.fit_error_message`, which adds DefaultPreemption's
        ``preemption: `` prefix).
        """
        if not self.post_filter_plugins:
            return None
        state = CycleState(score_weights=self._score_weights)
        kept: PostFilterResult | None = None
        said: list[tuple[str, tuple[str, ...]]] = []  # (plugin, reasons) of rejections with a message
        rejector = ""
        timings = result.plugin_timings
        for plugin in self.post_filter_plugins:
            try:
                started = time.perf_counter() if timings is not None else 0.0
                pfr = plugin.post_filter(state, pod, cluster, result, nominated)
                if timings is not None:
                    _timed(timings, plugin, "PostFilter", pfr.status.code.label, started)
            except Exception as exc:  # a plugin bug must not take the scheduler down
                log.exception("PostFilter plugin %s failed on %s", plugin.name, pod.key)
                msg = f'running PostFilter plugin "{plugin.name}": {exc}'
                return PostFilterResult(status=Status(Code.ERROR, (msg,), plugin.name), keep_nomination=True)
            status = pfr.status if pfr.status.plugin else pfr.status.with_plugin(plugin.name)
            if status.code != Code.UNSCHEDULABLE:
                return replace(pfr, status=status)
            if kept is None or not pfr.keep_nomination:
                kept = pfr
            if status.reasons:
                said.append((status.plugin, status.reasons))
            rejector = rejector or plugin.name
        assert kept is not None
        if len(said) == 1:  # the usual case: only DefaultPreemption has something to say
            return replace(kept, status=Status(Code.UNSCHEDULABLE, said[0][1], said[0][0]))
        # Several messages: prefix DefaultPreemption's here, as upstream's plugin does itself, and
        # name no plugin so that fit_error_message adds nothing more.
        reasons = tuple(
            PREEMPTION_PREFIX + r if name == names.DEFAULT_PREEMPTION else r for name, rs in said for r in rs
        )
        return replace(kept, status=Status(Code.UNSCHEDULABLE, reasons, "" if said else rejector))

    def filter_pass(
        self, pod: Pod, cluster: ClusterCache, nominated: NominatedPods | None = None
    ) -> tuple[CycleResult, bool]:
        """PreFilter and Filter only, for preemption's dry runs on a cache with victims taken out.

        Also says whether dry runs on several nodes may share one pass: when every Filter plugin
        that ran judges a node on that node's own data alone (resources, ports, the node's labels
        and taints), taking pods off one node cannot change another node's verdict. A plugin that
        is not row-local (inter-pod affinity, topology spread) allows it when it can say which pods
        matter to it (a ``relevance`` method): the batched dry run then moves only the pods that do
        not (:meth:`batch_guard`) and runs the nodes of the others one at a time.
        """
        active: list[str] = []
        res = self.run(pod, cluster, nominated=nominated, filter_only=True, active=active)
        local = self._row_local
        ran_global = any(not local.get(name, False) for name in active)
        self._last_pass = (pod, ran_global)
        if not ran_global:
            return res, True
        return res, all(callable(getattr(p, "relevance", None)) for p in self._not_row_local(pod))

    def batch_guard(self, pod: Pod, cluster: ClusterCache) -> Callable[[Pod], bool] | None:
        """For preemption's batched dry run: which pods may not be moved in the row accounting only.

        None when only row-local Filter plugins ran in the last :meth:`filter_pass` for ``pod``
        (any pod may be moved, as before). Otherwise :func:`relevance` over every non-row-local
        Filter plugin of the pod's plan, also those that said Skip at PreFilter: a pass that
        changes the cache itself runs PreFilter again, which may then not skip.
        """
        last = self._last_pass
        if last is not None and last[0] is pod and not last[1]:
            return None
        checked = self._not_row_local(pod)
        relevant = relevance(checked, pod, cluster) if checked else never
        return None if relevant is never else relevant

    def _not_row_local(self, pod: Pod) -> list[FilterPlugin]:
        """The Filter plugins of ``pod``'s plan that are not row-local (Skip at PreFilter or not)."""
        local = self._row_local
        return [p for p in self._gates.plan(pod).filters if not local.get(p.name, False)]

    @staticmethod
    def _select(result: CycleResult, row: int, nodes: object) -> CycleResult:
        result.selected_row = row
        result.selected_node = nodes.node(row).name  # type: ignore[attr-defined]
        result.status = SUCCESS
        return result


ROW_LOCAL_FILTERS = frozenset(
    {
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
        names.NODE_PORTS,
        names.NODE_RESOURCES_FIT,
    }
)
"""In-tree filters whose verdict on a node reads only that node's row (its own data and the pods
on it). Out-of-tree plugins can say so with a ``row_local = True`` attribute."""


def _is_row_local(plugin: object) -> bool:
    return getattr(plugin, "name", None) in ROW_LOCAL_FILTERS or getattr(plugin, "row_local", False) is True


_SAFE_TOTAL = 1 << 62


def _hint_covers(hint: BestRows, arrays: list[np.ndarray], weights: list[int], const: int) -> bool:
    """Whether ``hint`` ranks rows exactly as ``sum(w * a) + const`` would.

    Same arrays (identity) with the same weights, in any order; and no int64 wrap-around: the
    feasible rows' scores are within 0..100 (the range check ran), so a small enough bound on
    the weights and ``const`` means adding ``const`` keeps the order.
    """
    ha, hw = hint.arrays, hint.weights
    if len(arrays) != len(ha):
        return False
    if len(arrays) == 1:
        same = arrays[0] is ha[0] and weights[0] == hw[0]
    elif len(arrays) == 2:  # the usual case (Fit and BalancedAllocation): no sorting
        (a0, a1), (w0, w1) = arrays, weights
        same = (a0 is ha[0] and a1 is ha[1] and w0 == hw[0] and w1 == hw[1]) or (
            a0 is ha[1] and a1 is ha[0] and w0 == hw[1] and w1 == hw[0]
        )
    else:
        ours = sorted((id(a), w) for a, w in zip(arrays, weights, strict=True))
        same = ours == sorted((id(a), w) for a, w in zip(ha, hw, strict=True))
    if not same:
        return False
    bound = abs(const)
    for w in weights:
        bound += MAX_NODE_SCORE * abs(w)
    return bound < _SAFE_TOTAL


def _pick(hint: BestRows, u: float) -> int:
    """``select_best``'s choice among ``hint``'s ties: the ``floor(u * ties)``-th in row order."""
    k = min(int(u * hint.ties), hint.ties - 1)
    if k == 0:
        return hint.first
    if k == hint.ties - 1:
        return hint.last
    return kernels.nth_best_row(hint.arrays, hint.weights, hint.rows, hint.best, k - 1, hint.first + 1)


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


def _timed(
    timings: list[tuple[str, str, str, float]], plugin: Any, point: str, status: str, started: float
) -> None:
    """Note one built-in plugin call of a sampled cycle (guarded out-of-tree plugins time themselves).

    A vectorized call covers every node at once, so a Filter observation is the plugin's time over
    all nodes, where upstream observes one call per node; a fused kernel (NodeResourcesFit with
    BalancedAllocation's scores) counts in the plugin whose call runs it.
    """
    if not isinstance(plugin, GuardedPlugin):
        timings.append((plugin.name, point, status, time.perf_counter() - started))
