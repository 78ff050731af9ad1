"""One profile's framework: its plugins per extension point, and :meth:`Framework.schedule_pod`.

``schedule_pod`` reads like upstream's ``schedulePod``: PreFilter and Filter find the feasible
nodes (``findNodesThatFitPod``, with the nominated-pods rule), PreScore and Score rank them
(``prioritizeNodes``), and :mod:`.select` picks one (``selectHost``). Each step is a runner in its
own module; this class holds the profile's constants and composes them. The cycle reads the
cache's live arrays: the scheduling thread is the only writer, so nothing changes under it.

The binding cycle's points (Reserve, Unreserve, Permit, PreBind, PostBind) have runners here too;
:mod:`ksched.scheduler.binding_cycle` decides when each runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence, Sized
from types import MappingProxyType

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import batching, names
from ksched.framework.api import PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from ksched.framework.extender import (
    EXTENDER_NAME,
    SCORE_SCALE,
    extender_scores,
    find_nodes_passing_extenders,
)
from ksched.framework.handle import Handle
from ksched.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    FilterPlugin,
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
from ksched.framework.nominated_pass import NominatedPass
from ksched.framework.plans import Gates, Plan
from ksched.framework.relevance import never, relevance
from ksched.framework.result import CycleResult, PluginScores
from ksched.framework.runtime import binding
from ksched.framework.runtime.batched import NO_HINT, Outcome, run_batched
from ksched.framework.runtime.filtering import Fit, reached_on, run_filters, with_nominated_pods
from ksched.framework.runtime.postfilter import run_post_filter
from ksched.framework.runtime.prefilter import run_pre_filter
from ksched.framework.runtime.sampling import StartIndex, keep_found, recount_evaluations
from ksched.framework.runtime.scoring import WeightedScores, run_pre_score, run_score
from ksched.framework.runtime.select import select_row
from ksched.framework.runtime.timing import UNNEEDED_BINDING_POINTS, CycleTimer, FrameworkRecorder
from ksched.framework.waiting import WaitingPods
from ksched.model.pod import Pod

ROW_LOCAL_FILTERS = frozenset(
    {
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
        names.NODE_PORTS,
        names.NODE_RESOURCES_FIT,
        names.VOLUME_ZONE,
    }
)
"""In-tree filters whose verdict on a node reads only that node's row (its own data and the pods
on it). Out-of-tree plugins can say so with a ``row_local = True`` attribute."""

NO_NODES = "no nodes available to schedule pods"

_UNTIMED = CycleTimer(None, "")
"""The timer of filter-only passes (dry runs, the nominated-pods pass): upstream reports their
filters as part of the cycle that asked for them, not as PreFilter runs of their own."""


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
        reserve: Sequence[ReservePlugin] = (),
        permit: Sequence[PermitPlugin] = (),
        pre_bind: Sequence[PreBindPlugin] = (),
        post_bind: Sequence[PostBindPlugin] = (),
        plugins: Sequence[object] = (),
        percentage_of_nodes_to_score: int | None = None,
        handle: Handle | None = None,
        rng: np.random.Generator | None = None,
        recorder: FrameworkRecorder | None = None,
        start_index: StartIndex | None = None,
        batching_enabled: bool = True,
    ) -> None:
        """``handle``: the one the plugins were built with (a new one when None, with ``rng`` as
        its generator: give one or the other). ``start_index``: where ``percentageOfNodesToScore``'s
        search starts, shared by the scheduler's profiles (a new one when None).
        ``batching_enabled``: the ``OpportunisticBatching`` gate (:mod:`ksched.framework.batching`)."""
        if handle is not None and rng is not None:
            raise ValueError("give the generator to the Handle, not to both")
        self.profile = profile
        self.handle = handle if handle is not None else Handle(profile, rng=rng)
        self.rng: np.random.Generator = self.handle.rng
        self.waiting_pods: WaitingPods = self.handle.waiting_pods
        self.pre_filter_plugins = list(pre_filter)
        self.filter_plugins = list(filters)
        self.pre_score_plugins = list(pre_score)
        self.score_plugins = list(scores)
        self.post_filter_plugins = list(post_filter)
        self.reserve_plugins = list(reserve)
        self.permit_plugins = list(permit)
        self.pre_bind_plugins = list(pre_bind)
        self.post_bind_plugins = list(post_bind)
        self.has_binding_plugins = bool(reserve or permit or pre_bind or post_bind)
        gates = {getattr(p, "skips_pods_without", None) for p in (*reserve, *permit, *pre_bind, *post_bind)}
        self._binding_always = None in gates
        """Some binding-cycle plugin acts on every pod (declares no ``skips_pods_without``)."""
        self._binding_gates = tuple(sorted(g for g in gates if isinstance(g, str)))
        binders = {id(p): p for p in (*reserve, *permit, *pre_bind, *post_bind)}
        self._binding_work = tuple(p.binding_work for p in binders.values() if hasattr(p, "binding_work"))
        """Each binding plugin's ``binding_work`` hook, when every one of them has it (else empty)."""
        if len(self._binding_work) != len(binders):
            self._binding_work = ()
        self.plugins = {getattr(p, "name", repr(p)): p for p in plugins}
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.start_index = start_index if start_index is not None else StartIndex()
        self.timer = CycleTimer(recorder, profile)
        self._score_weights: Mapping[str, int] = MappingProxyType({p.name: w for p, w in self.score_plugins})
        normalizers = {p.name: p for p, _ in self.score_plugins if isinstance(p, NormalizeScorePlugin)}
        scorers = [(p, p.name, w, normalizers.get(p.name)) for p, w in self.score_plugins]
        self._gates = Gates(self.pre_filter_plugins, self.pre_score_plugins, self.filter_plugins, scorers)
        self._row_local = {p.name: _is_row_local(p) for p in self.filter_plugins}
        self._filter_order = {p.name: i for i, p in enumerate(self.filter_plugins)}
        self._last_dry_run: tuple[Pod, bool] | None = None
        self.extenders = self.handle.extenders
        """The scheduler's extenders (global, shared by the profiles), in config order."""
        self.handle.bind_framework(self)
        self._nominated_pass = NominatedPass(self.handle)
        self.batching_enabled = batching_enabled
        self._stored: list[batching.Stored] = []
        """The last fully evaluated cycles of a few signatures (opportunistic batching), newest first."""
        self._signature: tuple[object, ...] | None = None
        """The current cycle's pod signature when the cycle may be stored or reused."""
        counts = getattr(recorder, "batch_attempts", None)
        self.batch_outcomes: Counter[str] = counts(profile) if callable(counts) else Counter()
        """Batching attempts per upstream ``result`` (``scheduler_batch_attempts_total``)."""

    # ------------------------------------------------------------------ the cycle
    def schedule_pod(
        self,
        pod: Pod,
        cluster: ClusterCache,
        *,
        nominated: NominatedPods | None = None,
        explain: bool = False,
    ) -> CycleResult:
        """One scheduling cycle for ``pod`` (upstream ``schedulePod``).

        ``nominated``: the queue's nominated pods, for the two-pass rule. ``explain`` keeps every
        plugin's scores and every node's reasons, and scores even a single feasible node.
        """
        self.timer.start_cycle()
        result, plan, state = self._start(pod, cluster)
        if plan is None:
            return result
        self._signature = self._batch_signature(pod, plan, nominated, explain)
        outcome = self._try_batched(pod, cluster, plan, state, result)
        if outcome is Outcome.HIT or outcome is Outcome.DECIDED:
            return result
        if outcome is not None:  # the reuse gave up half-way: start the full cycle afresh
            result, plan, state = self._start(pod, cluster)
            assert plan is not None
        fit = self._find_nodes_that_fit(
            pod, cluster, plan, state, result, nominated, keep_reasons=explain, timer=self.timer
        )
        if fit is None:
            return result
        nodes = cluster.nodes
        nominated_row = nodes.row_of.get(pod.nominated_node_name) if pod.nominated_node_name else None
        if (
            nominated_row is not None
            and fit.feasible[nominated_row]
            and not explain
            and self._passes_extenders(pod, cluster, nominated_row)
        ):
            # Upstream filters the nominated node first; when it passes (the extenders too), it is
            # the only node looked at.
            on_nominated = reached_on(fit, np.array([nominated_row]))
            recount_evaluations(self.timer.evaluations.filter, fit, on_nominated)
            return _selected(result, nominated_row, cluster)
        failed = nominated_row if nominated_row is not None and not fit.feasible[nominated_row] else None
        limited = False
        if self.percentage_of_nodes_to_score is not None or fit.narrowed is not None or failed is not None:
            limited = self._search(fit, cluster, result.num_all_nodes, failed)
        if self.extenders and fit.count > 0 and not self._filter_with_extenders(pod, cluster, fit, result):
            return result
        if fit.count == 0:
            result.status = Status(Code.UNSCHEDULABLE)
            return result
        if fit.count == 1 and not explain:
            return _selected(result, int(np.flatnonzero(fit.feasible)[0]), cluster)
        return self._prioritize_and_select(pod, cluster, plan, state, fit, result, limited, explain)

    def _try_batched(
        self, pod: Pod, cluster: ClusterCache, plan: Plan, state: CycleState, result: CycleResult
    ) -> Outcome | None:
        """The cycle from the stored results of the pod's signature (:mod:`.batched`), if any are
        stored; None when there are none. A sampled cycle batches too and times the plugin calls it
        makes (:func:`.batched.run_batched`): a reused verdict or score is no call, as upstream's
        batched cycle observes no Score plugin. Stored results that did not decide the cycle are
        dropped: they are half brought up to date, or PreFilter / PreScore decided it."""
        stored = batching.find(self._stored, self._signature)
        if stored is None:
            if self._signature is not None:
                self.batch_outcomes[NO_HINT] += 1
            return None
        any_scorer = bool(self.score_plugins)
        outcome = run_batched(stored, self.rng, pod, cluster, plan, state, result, self.timer, any_scorer)
        self.batch_outcomes[outcome.label] += 1
        if outcome is not Outcome.HIT:
            self._stored.remove(stored)
        return outcome

    def _batch_signature(
        self, pod: Pod, plan: Plan, nominated: NominatedPods | None, explain: bool
    ) -> tuple[object, ...] | None:
        """The pod's signature when its cycle may reuse or be stored (:mod:`.batching`): not with
        the gate off, an explanation, extenders, ``percentageOfNodesToScore``, a nominated node or
        any nominated pod (their rules read more than one cycle's results)."""
        if (
            not self.batching_enabled
            or explain
            or self.extenders
            or self.percentage_of_nodes_to_score is not None
            or pod.nominated_node_name
        ):
            return None
        if nominated is not None and not (isinstance(nominated, Sized) and len(nominated) == 0):
            return None
        return batching.sign(plan, pod)

    def _store(
        self,
        cluster: ClusterCache,
        plan: Plan,
        state: CycleState,
        fit: Fit,
        result: CycleResult,
        kept: list[tuple[ScorePlugin, int, NormalizeScorePlugin | None, Scores, Scores]],
    ) -> None:
        """Keep this full cycle's results for the next pod of the same signature, when every
        plugin that ran can be brought up to date on a few rows."""
        signature = self._signature
        row_filters = batching.capturable(plan, state, fit.ran, self.filter_plugins)
        if signature is None or row_filters is None:
            return
        entry = batching.store(
            signature, cluster, state, row_filters, result.filters, fit.feasible, fit.count, kept
        )
        batching.keep(self._stored, entry)

    def _start(self, pod: Pod, cluster: ClusterCache) -> tuple[CycleResult, Plan | None, CycleState]:
        """The cycle's result, its plan for ``pod`` and its state; no plan when there is no node."""
        nodes = cluster.nodes
        result = CycleResult(pod, self.profile, len(nodes), SUCCESS)
        plan = self._gates.plan(pod)
        state = CycleState(
            skip_filter=set(plan.skip_filter),
            skip_score=set(plan.skip_score),
            score_weights=self._score_weights,
            sampled=self.timer.sampled,
        )
        result.state = state
        if not nodes:
            result.status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_NODES,))
            return result, None, state
        # One snapshot of the valid rows; the feasible mask starts as the same array and is copied
        # only when something narrows it (most cycles on a healthy cluster never do).
        result.valid = nodes.valid[: nodes.n_rows].copy()
        return result, plan, state

    def _find_nodes_that_fit(
        self,
        pod: Pod,
        cluster: ClusterCache,
        plan: Plan,
        state: CycleState,
        result: CycleResult,
        nominated: NominatedPods | None,
        *,
        keep_reasons: bool,
        timer: CycleTimer,
        skipped: frozenset[str] | set[str] = frozenset(),
    ) -> Fit | None:
        """PreFilter, Filter and the nominated-pods pass; None when PreFilter or a plugin error
        decided the cycle (``result.status``). ``result.feasible`` is set either way."""
        valid = result.valid
        assert valid is not None
        pre_filters = plan.pre_filter
        if skipped:
            state.skip_filter.update(skipped)
            pre_filters = [p for p in pre_filters if p.name not in skipped]
        start = run_pre_filter(pre_filters, state, pod, cluster, result, valid, timer)
        if start is None:
            return None
        started = timer.now()  # upstream's Filter duration: every node, the nominated-pods pass included
        fit = run_filters(plan.filters, state, pod, cluster, result, start, timer)
        if fit is None:
            timer.point("Filter", "Error", started)
            return None
        if nominated is not None:
            with_nominated_pods(
                fit, self._nominated_pass, nominated, state, pod, cluster, result, keep_reasons=keep_reasons
            )
        if fit.count < 0:
            fit.count = int(np.count_nonzero(fit.feasible))
        result.feasible = fit.feasible
        timer.point("Filter", "Success", started)
        return fit

    def _filter_with_extenders(self, pod: Pod, cluster: ClusterCache, fit: Fit, result: CycleResult) -> bool:
        """The extenders' Filter over ``fit``'s rows (:func:`.extender.find_nodes_passing_extenders`);
        False when an extender's error decided the cycle (``result.status``)."""
        feasible, error = find_nodes_passing_extenders(self.extenders, pod, cluster, fit.feasible, result)
        if error is not None:
            result.status = Status(Code.ERROR, (str(error),), EXTENDER_NAME)
            return False
        if feasible is not fit.feasible:
            fit.feasible = feasible
            fit.count = int(np.count_nonzero(feasible))
            fit.adopted = False
            result.feasible = feasible
        return True

    def _passes_extenders(self, pod: Pod, cluster: ClusterCache, row: int) -> bool:
        """Whether the extenders keep the nominated node (upstream ``evaluateNominatedNode``; an
        error there only sends the cycle on to every node). Its verdict is not kept: the search
        over every node asks again."""
        if not self.extenders:
            return True
        only = np.zeros(cluster.nodes.n_rows, dtype=np.bool_)
        only[row] = True
        scratch = CycleResult(pod, self.profile, 1, SUCCESS)
        feasible, error = find_nodes_passing_extenders(self.extenders, pod, cluster, only, scratch)
        return error is None and bool(feasible[row])

    def _search(self, fit: Fit, cluster: ClusterCache, num_all: int, failed_nominated: int | None) -> bool:
        """``percentageOfNodesToScore`` (:func:`.sampling.keep_found`); True when ``fit`` was cut."""
        return keep_found(
            fit,
            cluster,
            self.start_index,
            self.timer.evaluations.filter,
            percentage=self.percentage_of_nodes_to_score,
            scoring=bool(self.score_plugins),
            num_all=num_all,
            failed_nominated=failed_nominated,
        )

    def _prioritize_and_select(
        self,
        pod: Pod,
        cluster: ClusterCache,
        plan: Plan,
        state: CycleState,
        fit: Fit,
        result: CycleResult,
        limited: bool,
        explain: bool,
    ) -> CycleResult:
        """PreScore, Score (+ NormalizeScore and weights) and selectHost over ``fit``'s rows."""
        feasible = fit.feasible
        status = run_pre_score(plan.pre_score, state, pod, cluster, feasible, self.timer)
        if status is not SUCCESS:
            result.status = status
            return result
        storing = self._signature is not None and fit.narrowed is None
        kept: list[tuple[ScorePlugin, int, NormalizeScorePlugin | None, Scores, Scores]] | None = (
            [] if storing else None
        )
        scores = run_score(
            plan.scorers,
            state,
            pod,
            cluster,
            feasible,
            result,
            self.timer,
            explain=explain,
            scored=fit.count,
            keep=kept,
        )
        if scores is None:
            return result
        extended = self.extenders and self._add_extender_scores(
            pod, cluster, feasible, scores, result, explain
        )
        u = float(self.rng.random())
        hint_allowed = fit.adopted and not limited and not explain and not extended
        any_scorer = bool(self.score_plugins) or bool(self.extenders)
        row = select_row(
            result, scores, feasible, state.best_rows, u, hint_allowed=hint_allowed, any_scorer=any_scorer
        )
        result.feasible = feasible
        if kept is not None:
            self._store(cluster, plan, state, fit, result, kept)
        return _selected(result, row, cluster)

    def _add_extender_scores(
        self,
        pod: Pod,
        cluster: ClusterCache,
        feasible: np.ndarray,
        scores: WeightedScores,
        result: CycleResult,
        explain: bool,
    ) -> bool:
        """Upstream ``prioritizeNodes``' extender part, added to ``scores``; whether any answered."""
        got = extender_scores(self.extenders, pod, cluster, feasible)
        if got is None:
            return False
        total, parts = got
        scores.arrays.append(total)
        scores.weights.append(1)
        if explain:
            result.scores.extend(
                PluginScores(f"{EXTENDER_NAME} {name}", w * SCORE_SCALE, raw) for name, w, raw in parts
            )
        return True

    # ------------------------------------------------------------------ Filter for others
    def run_filter_plugins_with_nominated_pods(
        self,
        pod: Pod,
        cluster: ClusterCache,
        nominated: NominatedPods | None = None,
        *,
        skipped: frozenset[str] | set[str] = frozenset(),
    ) -> CycleResult:
        """PreFilter and Filter only (preemption's dry runs, the nominated-pods pass): the status
        is Unschedulable when no row is feasible. ``skipped`` names plugins whose PreFilter said
        Skip in the cycle this pass belongs to: they stay skipped (upstream reuses that cycle's
        state, so adding pods never brings a skipped plugin back)."""
        return self._filters_only(pod, cluster, nominated, skipped)[0]

    def _filters_only(
        self,
        pod: Pod,
        cluster: ClusterCache,
        nominated: NominatedPods | None,
        skipped: frozenset[str] | set[str],
    ) -> tuple[CycleResult, list[str]]:
        result, plan, state = self._start(pod, cluster)
        if plan is None:
            return result, []
        fit = self._find_nodes_that_fit(
            pod, cluster, plan, state, result, nominated, keep_reasons=True, timer=_UNTIMED, skipped=skipped
        )
        if fit is None:
            return result, []
        result.status = Status(Code.UNSCHEDULABLE) if fit.count == 0 else SUCCESS
        return result, fit.ran

    def dry_run_filters(
        self, pod: Pod, cluster: ClusterCache, nominated: NominatedPods | None
    ) -> tuple[CycleResult, bool]:
        """PreFilter and Filter for preemption's dry runs, and whether dry runs on several nodes
        may share one pass.

        They may when every Filter plugin that ran judges a node on that node's own data alone
        (resources, ports, the node's labels and taints): taking pods off one node cannot change
        another node's verdict. A plugin that is not row-local (inter-pod affinity, topology
        spread) allows it when it can say which pods matter to it (a ``relevance`` method): the
        batched dry run then moves only the pods that do not (:meth:`batch_guard`) and runs the
        nodes of the others one at a time.
        """
        result, ran = self._filters_only(pod, cluster, nominated, frozenset())
        ran_global = any(not self._row_local.get(name, False) for name in ran)
        self._last_dry_run = (pod, ran_global)
        if not ran_global:
            return result, True
        return result, all(callable(getattr(p, "relevance", None)) for p in self.not_row_local_filters(pod))

    def batch_guard(self, pod: Pod, cluster: ClusterCache) -> Callable[[Pod], bool] | None:
        """For preemption's batched dry run: which pods may not be moved in the row accounting only.

        None when only row-local Filter plugins ran in the last :meth:`dry_run_filters` for
        ``pod`` (any pod may be moved). Otherwise :func:`relevance` over every non-row-local
        Filter plugin of the pod's plan, also those that said Skip at PreFilter: a pass that
        changes the cache itself runs PreFilter again, which may then not skip.
        """
        last = self._last_dry_run
        if last is not None and last[0] is pod and not last[1]:
            return None
        checked = self.not_row_local_filters(pod)
        relevant = relevance(checked, pod, cluster) if checked else never
        return None if relevant is never else relevant

    def is_row_local(self, plugin: str) -> bool:
        return self._row_local.get(plugin, False)

    def not_row_local_filters(self, pod: Pod) -> list[FilterPlugin]:
        """The Filter plugins of ``pod``'s plan that are not row-local (Skip at PreFilter or not)."""
        return [p for p in self._gates.plan(pod).filters if not self._row_local.get(p.name, False)]

    def filter_position(self, plugin: str) -> int:
        """The plugin's place among the profile's Filter plugins; -1 when it is none of them."""
        return self._filter_order.get(plugin, -1)

    # ------------------------------------------------------------------ PostFilter
    def run_post_filter(
        self, pod: Pod, cluster: ClusterCache, result: CycleResult, nominated: NominatedPods | None = None
    ) -> PostFilterResult | None:
        """The PostFilter plugins (preemption) after a cycle found no feasible node; None when
        the profile has none (:mod:`.postfilter`)."""
        if not self.post_filter_plugins:
            return None
        return run_post_filter(
            self.post_filter_plugins, self._score_weights, pod, cluster, result, nominated, self.timer
        )

    # ------------------------------------------------------------------ binding cycle
    def needs_binding_cycle(self, pod: Pod, state: CycleState | None = None) -> bool:
        """Whether any binding-cycle plugin (Reserve, Permit, PreBind, PostBind) has work for the
        pod: not when each of them declares ``skips_pods_without`` an attribute the pod lacks, nor
        when each has a ``binding_work`` hook that says no for this cycle's ``state`` (they promise
        to do nothing then, :mod:`ksched.framework.hooks`), so such pods go straight to the binder."""
        if not self.has_binding_plugins:
            return False
        if not self._binding_always and not any(getattr(pod, attr) for attr in self._binding_gates):
            return False
        if state is not None and self._binding_work:
            return any(work(state, pod) for work in self._binding_work)
        return True

    def run_reserve(self, state: CycleState, pod: Pod, node: str) -> Status:
        return binding.run_reserve(self.reserve_plugins, state, pod, node, self.timer)

    def run_unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        binding.run_unreserve(self.reserve_plugins, state, pod, node, self.timer)

    def run_permit(self, state: CycleState, pod: Pod, node: str) -> tuple[Status, dict[str, float]]:
        return binding.run_permit(self.permit_plugins, state, pod, node, self.timer)

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node: str) -> Status:
        return binding.run_pre_bind_pre_flights(self.pre_bind_plugins, state, pod, node, self.timer)

    def run_pre_bind(self, state: CycleState, pod: Pod, node: str) -> Status | binding.PreBindWait:
        """PreBind, or where it stopped to wait (:meth:`resume_pre_bind` goes on from there)."""
        return binding.run_pre_bind(self.pre_bind_plugins, state, pod, node, self.timer)

    def resume_pre_bind(
        self, state: CycleState, pod: Pod, node: str, wait: binding.PreBindWait, outcome: Status
    ) -> Status | binding.PreBindWait:
        return binding.resume_pre_bind(self.pre_bind_plugins, state, pod, node, self.timer, wait, outcome)

    def run_post_bind(self, state: CycleState, pod: Pod, node: str) -> None:
        binding.run_post_bind(self.post_bind_plugins, state, pod, node, self.timer)

    def observe_bind(self, status: str, started: float) -> None:
        """The Bind extension point's duration (the binding itself runs in the binder)."""
        self.timer.point("Bind", status, started)

    def observe_unneeded_binding_cycle(self, checked: float) -> None:
        """Reserve, Permit, PreBindPreFlight and PreBind of a pod none of whose binding-cycle plugins
        has work (:meth:`needs_binding_cycle` said no, after ``checked``): upstream runs and observes
        them for every pod, its plugins returning at once; so are they here, with the check's time."""
        self.timer.points_without_work(UNNEEDED_BINDING_POINTS, _UNNEEDED_STATUSES, checked)

    def observe_unneeded_after_bind(self, bound: bool, checked: float) -> None:
        """PostBind after a bind, or Unreserve after a failed one, for such a pod."""
        self.timer.points_without_work(("PostBind",) if bound else ("Unreserve",), ("Success",), checked)


_UNNEEDED_STATUSES = ("Success", "Success", "Skip", "Success")
"""Upstream's statuses of :data:`UNNEEDED_BINDING_POINTS` when no plugin acts: PreBindPreFlight says
Skip when every PreBind plugin skips (or there is none)."""


def _selected(result: CycleResult, row: int, cluster: ClusterCache) -> CycleResult:
    result.selected_row = row
    result.selected_node = cluster.nodes.node(row).name
    result.status = SUCCESS
    return result


def _is_row_local(plugin: object) -> bool:
    return getattr(plugin, "name", None) in ROW_LOCAL_FILTERS or getattr(plugin, "row_local", False) is True
