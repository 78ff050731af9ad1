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
from collections.abc import Callable, Mapping, Sequence, Sized
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels, names
from ksched.framework.api import PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
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
from ksched.framework.plans import Gates
from ksched.framework.result import (
    CycleResult,
    PluginScores,
    num_feasible_nodes_to_find,
    weighted_sum,
)
from ksched.framework.row_delta import RowDelta
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
        self._delta_memo: tuple[tuple[tuple[int, int], ...], RowDelta] | None = None
        for p in self.post_filter_plugins:
            attach = getattr(p, "attach_framework", None)
            if attach is not None:
                attach(self)  # preemption re-runs this profile's filters in its dry runs

    def _row_delta(self, rows: list[int], by_row: dict[int, list[Pod]]) -> RowDelta:
        """The :class:`RowDelta` of ``by_row``'s pods on ``rows``, remembered for the next cycle
        (keyed by row and pod identity; the delta keeps the pods alive, so ids are not reused)."""
        key = tuple((r, id(p)) for r in rows for p in by_row[r])
        memo = self._delta_memo
        if memo is not None and memo[0] == key:
            return memo[1]
        delta = RowDelta([p for r in rows for p in by_row[r]], [r for r in rows for _ in by_row[r]])
        self._delta_memo = (key, delta)
        return delta

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
        for plugin in pre_filters:
            try:
                pfr, status = plugin.pre_filter(state, pod, cluster)
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
                fr = plugin.filter(state, pod, cluster)
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
        if nominated is not None and (len(nominated) if isinstance(nominated, Sized) else 1):
            narrowed = _filter_with_nominated(self, pod, cluster, nominated, feasible, result, state)
            if narrowed is not None:
                hint = state.best_rows
                kept = None
                if hint is not None and adopted is not None and hint.rows is adopted:
                    kept = _hint_without(hint, adopted, narrowed)
                state.best_rows = kept
                feasible, adopted, count = narrowed, (narrowed if kept is not None else None), -1
        result.feasible = feasible
        if count < 0:
            count = int(np.count_nonzero(feasible))
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
                status = plugin.pre_score(state, pod, cluster, feasible)
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
                raw = plugin.score(state, pod, cluster, feasible)
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
        for plugin in self.post_filter_plugins:
            try:
                pfr = plugin.post_filter(state, pod, cluster, result, nominated)
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
        (any pod may be moved, as before). Otherwise :func:`_relevance` over every non-row-local
        Filter plugin of the pod's plan, also those that said Skip at PreFilter: a pass that
        changes the cache itself runs PreFilter again, which may then not skip.
        """
        last = self._last_pass
        if last is not None and last[0] is pod and not last[1]:
            return None
        checked = self._not_row_local(pod)
        relevant = _relevance(checked, pod, cluster) if checked else _never
        return None if relevant is _never else relevant

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


POD_INDEPENDENT_FILTERS = frozenset(
    {
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
    }
)
"""In-tree filters whose verdict on a node never depends on the pods there. The nominated-pods
pass only re-asks rows that already passed every filter without the nominated pods, so these
would pass them again: that pass leaves them out."""


def _is_row_local(plugin: object) -> bool:
    return getattr(plugin, "name", None) in ROW_LOCAL_FILTERS or getattr(plugin, "row_local", False) is True


def _never(other: Pod) -> bool:
    return False


def _always(other: Pod) -> bool:
    return True


def _relevance(plugins: Sequence[object], pod: Pod, cluster: ClusterCache) -> Callable[[Pod], bool]:
    """Whether counting a pod on a node (or taking it off) could change the Filter verdict of one
    of ``plugins`` (the non-row-local ones that run for ``pod``) on any node other than through
    that node's own row accounting (requests, pod count, ports).

    Each plugin answers through ``relevance(pod, cluster)``, which returns such a predicate (None:
    no pod is) and must say True when unsure; a plugin without it makes every pod relevant. Pods
    that are not relevant can be moved in the row accounting only (:func:`_count_on_rows`,
    preemption's ``ArrayProbe``) and many nodes share one filter pass; the others need the cache
    itself changed (``assume`` / ``remove_pod``), one node at a time, as upstream clones one
    NodeInfo at a time. Returns :func:`_never` / :func:`_always` themselves when that is the
    answer, so that callers can skip asking pod by pod.
    """
    checks: list[Callable[[Pod], bool]] = []
    for plugin in plugins:
        factory = getattr(plugin, "relevance", None)
        if factory is None:
            return _always
        check = factory(pod, cluster)
        if check is not None:
            checks.append(check)
    if not checks:
        return _never
    if len(checks) == 1:
        return checks[0]
    return lambda other: any(check(other) for check in checks)


def _nominated_by_row(pod: Pod, cluster: ClusterCache, nominated: NominatedPods) -> dict[int, list[Pod]]:
    """Rows with nominated pods that count for ``pod``: priority >= its own, not the pod itself,
    and not already in the cache (an assumed or bound pod is counted there already)."""
    row_of = cluster.nodes.row_of
    out: dict[int, list[Pod]] = {}
    groups_of = getattr(nominated, "groups_at_least", None)
    if groups_of is not None:
        known = cluster.pods  # the uid -> entry map behind ``uid in cluster``
        me = pod.uid
        for name, group in groups_of(pod.priority):
            row = row_of.get(name)
            if row is None:
                continue
            pods = [p for p in group if p.uid != me and p.uid not in known]
            if pods:
                out[row] = pods
        return out
    names_of = getattr(nominated, "node_names", None)
    node_names = names_of() if names_of is not None else list(row_of)
    for name in node_names:
        row = row_of.get(name)
        if row is None:
            continue
        pods = [
            p
            for p in nominated.pods_for_node(name)
            if p.uid != pod.uid and p.priority >= pod.priority and p.uid not in cluster
        ]
        if pods:
            out[row] = pods
    return out


def _filter_with_nominated(
    fw: Framework,
    pod: Pod,
    cluster: ClusterCache,
    nominated: NominatedPods,
    feasible: np.ndarray,
    result: CycleResult,
    state: CycleState,
) -> np.ndarray | None:
    """Pass 1 of upstream's two-pass rule on rows that passed without nominated pods (pass 2).

    When every filter that runs is pod-independent or answers for a few rows, the rows with
    nominated pods are asked directly (:func:`_rows_with_nominated`; exact upstream reasons too).
    Otherwise the nominated pods are counted on their rows and the filters re-run; rows that fail
    now fail the cycle, with that pass's reasons appended to ``result.filters`` (a row that had
    failed already keeps the reasons of the pass without nominated pods). Rows whose nominated pods
    no non-row-local filter of the plan cares about (:func:`_relevance`; all rows when every
    filter that ran is row-local) share one pass, with the pods counted in the per-row accounting only
    (what row-local filters read; integer adds, undone exactly): each row's verdict is then the
    one its own pass would give, since the other filters would not see those pods anyway. Every
    other row gets its own pass with its pods assumed in the cache (``assume`` / ``forget`` are
    exact inverses; this thread is the only writer), as upstream clones one NodeInfo at a time.
    Returns a narrowed copy of ``feasible``, or None when no row dropped out.
    """
    by_row = _nominated_by_row(pod, cluster, nominated)
    if not by_row:
        return None
    skipped = state.skip_filter
    row_filters = _row_subset_filters(fw, skipped)
    if row_filters is not None:
        return _rows_with_nominated(
            fw, row_filters, pod, cluster, state, list(by_row), by_row, feasible, result
        )
    rows = [r for r in by_row if feasible[r]]
    if not rows:
        return None
    row_local = fw._row_local
    if all(row_local.get(p.name, False) for p in fw.filter_plugins if p.name not in skipped):
        batched, single = rows, []
    else:
        # Plugins skipped in this cycle stay skipped in the per-row passes (``skipped=``), as
        # upstream's do; asking the skipped ones too is merely conservative.
        relevant = _relevance(fw._not_row_local(pod), pod, cluster)
        if relevant is _never:
            batched, single = rows, []
        elif relevant is _always:
            batched, single = [], rows
        else:
            batched, single = [], []
            for r in rows:
                (single if any(relevant(p) for p in by_row[r]) else batched).append(r)
    n = feasible.shape[0]
    out: np.ndarray | None = None
    groups = ([batched] if batched else []) + [[r] for r in single]
    for group in groups:
        if group is batched:
            pods = [p for r in group for p in by_row[r]]
            on = [r for r in group for _ in by_row[r]]
            _count_on_rows(cluster, pods, on, +1)
            try:
                sub = fw.run(pod, cluster, filter_only=True, skipped=skipped)
            finally:
                _count_on_rows(cluster, pods, on, -1)
        else:
            added: list[str] = []
            try:
                for r in group:
                    node_name = cluster.nodes.node(r).name
                    for p in by_row[r]:
                        cluster.assume(p, node_name)
                        added.append(p.uid)
                sub = fw.run(pod, cluster, filter_only=True, skipped=skipped)
            finally:
                for uid in reversed(added):
                    cluster.forget(uid)
        sub_ok = sub.feasible
        bad = [r for r in group if sub_ok is None or not sub_ok[r]]
        if not bad:
            continue
        mask = np.zeros(n, dtype=np.bool_)
        mask[bad] = True
        if out is None:
            out = feasible.copy()
        out[mask] = False
        if sub.status.code == Code.ERROR or sub.prefilter_rejection is not None:
            s = sub.prefilter_rejection if sub.prefilter_rejection is not None else sub.status
            code = s.code if s.code.is_rejection else Code.UNSCHEDULABLE
            result.filters.append((s.plugin, FilterResult.from_mask(mask, s.message, code)))
            continue
        for plugin_name, fr in sub.filters:
            if fr.failed is None:
                continue
            failed = np.where(mask, fr.failed[:n], np.uint64(0))
            if failed.any():
                result.filters.append((plugin_name, FilterResult(failed, fr.reasons, fr.codes)))
    return out


def _row_subset_filters(fw: Framework, skipped: frozenset[str] | set[str]) -> list[Any] | None:
    """The filters the nominated-pods pass must re-ask, when each of them can answer for a few rows
    (``filter_rows``) and the others are :data:`POD_INDEPENDENT_FILTERS`; None otherwise (the pass
    then re-runs the whole profile, as before)."""
    out: list[Any] = []
    for plugin in fw.filter_plugins:
        if plugin.name in skipped or plugin.name in POD_INDEPENDENT_FILTERS:
            continue
        if getattr(plugin, "filter_rows", None) is None:
            return None
        out.append(plugin)
    return out


def _rows_with_nominated(
    fw: Framework,
    plugins: list[Any],
    pod: Pod,
    cluster: ClusterCache,
    state: CycleState,
    rows: list[int],
    by_row: dict[int, list[Pod]],
    feasible: np.ndarray,
    result: CycleResult,
) -> np.ndarray | None:
    """The two-pass rule on every row with nominated pods, when only row-local filters run.

    Only ``plugins`` (the ones that read the pods on a node) are asked, about those rows only, with
    the pods handed over as a :class:`RowDelta` to add to what the cache holds (the cache itself is
    not touched); the other filters would answer as they did without the pods. A row that fails
    with the pods fails the cycle with the reasons of that pass, as upstream reports the pass with
    nominated pods first (:func:`_merge_first_pass`); a row that passes with them keeps the verdict
    it had without them. The cost no longer grows with the cluster. Returns a narrowed copy of
    ``feasible``, or None when no row dropped out.
    """
    delta = fw._row_delta(rows, by_row)
    idx = delta.rows
    found: list[tuple[str, FilterResult]] = []
    for plugin in plugins:
        fr = plugin.filter_rows(state, pod, cluster, delta)
        if fr.failed is not None and fr.failed.any():
            found.append((plugin.name, fr))
    if not found:
        return None
    bad = np.zeros(idx.size, dtype=np.bool_)
    for _name, fr in found:
        assert fr.failed is not None
        bad |= fr.failed != 0
    failing = idx[bad]
    _merge_first_pass(fw, result, plugins, found, idx, failing, feasible.shape[0])
    if not feasible[failing].any():
        return None  # every such row had failed already; only its reasons changed
    out = feasible.copy()
    out[failing] = False
    return out


def _merge_first_pass(
    fw: Framework,
    result: CycleResult,
    plugins: list[Any],
    found: list[tuple[str, FilterResult]],
    idx: np.ndarray,
    failing: np.ndarray,
    n: int,
) -> None:
    """Make ``result.filters`` report, on the ``failing`` rows, the pass with nominated pods.

    On those rows the bits of ``plugins`` (the filters that read a node's pods) become the ones
    from that pass (``found``, aligned with ``idx``; a plugin not in ``found`` passed them); the
    other filters' bits stand, since the pods do not change their verdict. Each plugin keeps its
    place in the configured order, so the first failure per row is the one upstream's pass with
    nominated pods stops at.
    """
    first_pass = dict(found)
    order = fw._filter_order
    entries = result.filters
    for plugin in plugins:
        name = plugin.name
        fr1 = first_pass.get(name)
        at = next((i for i, (pname, _) in enumerate(entries) if pname == name), None)
        if at is not None:
            old = entries[at][1]
            assert old.failed is not None
            if fr1 is None or (fr1.reasons == old.reasons and fr1.codes == old.codes):
                merged = old.failed[:n].copy()
                merged[failing] = 0
                if fr1 is not None:
                    assert fr1.failed is not None
                    merged[idx] |= fr1.failed
                entries[at] = (name, FilterResult(merged, old.reasons, old.codes))
                continue
            cleared = old.failed[:n].copy()
            cleared[failing] = 0
            entries[at] = (name, FilterResult(cleared, old.reasons, old.codes))
        if fr1 is None:
            continue
        assert fr1.failed is not None
        bits = np.zeros(n, dtype=np.uint64)
        bits[idx] = fr1.failed
        place = order.get(name, len(order))
        pos = next(
            (i for i, (pname, _) in enumerate(entries) if order.get(pname, -1) > place),
            len(entries),
        )
        entries.insert(pos, (name, FilterResult(bits, fr1.reasons, fr1.codes)))


def _count_on_rows(cluster: ClusterCache, pods: list[Pod], rows: list[int], sign: int) -> None:
    """Add (``sign=1``) or take away (``-1``) ``pods`` on ``rows`` in the per-row accounting only:
    requested, non-zero requested, pod count and host ports, which is all row-local filters read.
    Integer adds, so ``+1`` then ``-1`` leaves the arrays bit for bit as they were."""
    RowDelta(pods, rows).apply(cluster, sign)


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


def _hint_without(hint: BestRows, before: np.ndarray, after: np.ndarray) -> BestRows | None:
    """``hint`` for the rows of ``after``, a subset of ``before`` (= ``hint.rows``) that lost a few
    rows (the nominated-pods pass), or None when it no longer says where the best rows are.

    A lost row that scored below the best changes nothing; one that tied for it is one tie fewer,
    unless it was the first or the last tie (then the full sum and scan decide). Without this every
    cycle on a cluster with nominations would sum and scan all rows again.
    """
    lost = np.flatnonzero(before != after)
    if lost.size == 0:
        return replace(hint, rows=after)
    score = np.zeros(lost.size, dtype=np.int64)
    for scores, weight in zip(hint.arrays, hint.weights, strict=True):
        score += scores[lost] * weight
    tied = lost[score == hint.best]
    if tied.size and (hint.first in tied or hint.last in tied):
        return None
    if tied.size >= hint.ties:
        return None
    return replace(hint, rows=after, ties=hint.ties - int(tied.size))


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
