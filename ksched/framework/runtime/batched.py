"""The batched cycle: a pod with the stored cycle's signature (:mod:`ksched.framework.batching`).

PreFilter and PreScore run as in the full cycle; Filter and Score are the stored results brought up
to date on the rows that changed; selectHost draws once, exactly where the full cycle draws. Each
step either decides the cycle as the full cycle would (a PreFilter rejection, a PreScore error) or
finds that it cannot be exact and hands the pod to the full cycle before anything was drawn.

On a sampled cycle every plugin call made here is timed into the plugin durations: the
row-accounting plugins' answers on the changed rows (as Filter and as Score) and each NormalizeScore
that is redone. Plugins whose stored verdicts and scores stand are not called, so nothing of theirs
is observed, as upstream's batched cycle observes no Score plugin.
"""

from __future__ import annotations

import time
from enum import Enum

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import batching
from ksched.framework.batching import RowsAnswer, RowsPlugin, Stored
from ksched.framework.interface import SUCCESS, CycleState
from ksched.framework.plans import Plan
from ksched.framework.result import CycleResult
from ksched.framework.runtime.prefilter import run_pre_filter
from ksched.framework.runtime.scoring import run_pre_score
from ksched.framework.runtime.timing import CycleTimer
from ksched.model.pod import Pod


class Outcome(Enum):
    """How a batched attempt ended."""

    HIT = "hint_used"
    DECIDED = "decided"
    """PreFilter or PreScore decided the cycle, as they would have in the full cycle."""
    MISS = "hint_not_used"
    """The full cycle runs instead; nothing was drawn."""

    @property
    def label(self) -> str:
        """Upstream ``scheduler_batch_attempts_total``'s ``result``: ``hint_used`` only when the
        stored results chose the node."""
        return "hint_used" if self is Outcome.HIT else "hint_not_used"


NO_HINT = "no_hint"
"""The ``result`` of a signable pod with no stored cycle of its signature."""


def run_batched(
    stored: Stored,
    rng: np.random.Generator,
    pod: Pod,
    cluster: ClusterCache,
    plan: Plan,
    state: CycleState,
    result: CycleResult,
    timer: CycleTimer,
    any_scorer: bool,
) -> Outcome:
    """One cycle from ``stored`` (whose signature is the pod's). On HIT ``result`` holds the chosen
    row; on MISS ``stored`` may be half-updated and must be dropped."""
    position = cluster.nodes.journal.end
    rows = batching.changed_rows(stored, cluster)
    if rows is None:
        return Outcome.MISS
    valid = result.valid
    assert valid is not None
    start = run_pre_filter(plan.pre_filter, state, pod, cluster, result, valid, timer)
    if start is None:
        return Outcome.DECIDED
    if start is not valid or state.skip_filter != stored.skip_filter:
        return Outcome.MISS
    started = timer.now()
    if not _refilter(stored, pod, cluster, state, rows, timer):
        return Outcome.MISS
    timer.point("Filter", "Success", started)
    feasible = stored.feasible.copy()  # the caller may mutate result.feasible
    result.feasible = feasible
    status = run_pre_score(plan.pre_score, state, pod, cluster, feasible, timer)
    if status is not SUCCESS:
        result.status = status
        return Outcome.DECIDED
    if state.skip_score != stored.skip_score:
        return Outcome.MISS
    started = timer.now()
    if not _rescore(stored, pod, cluster, state, rows, timer):
        return Outcome.MISS
    timer.point("Score", "Success", started)
    stored.journal_end = position
    u = float(rng.random())
    row, total = batching.select(stored, u, any_scorer)
    result.total = total
    result.selected_row = row
    result.selected_node = cluster.nodes.node(row).name
    result.status = SUCCESS
    return Outcome.HIT


def _refilter(
    stored: Stored, pod: Pod, cluster: ClusterCache, state: CycleState, rows: np.ndarray, timer: CycleTimer
) -> bool:
    """The stored feasible rows with ``rows`` asked again; False when a row became feasible (its
    stored raw scores may be garbage) or fewer than two rows are left (the full cycle does not
    draw then)."""
    if rows.size == 0:
        return stored.count >= 2
    ok = stored.static_ok[rows]
    for plugin in stored.row_filters:
        passed = _timed_rows(plugin, "Filter", state, pod, cluster, rows, timer).passed
        if passed is not None:
            ok &= passed
    was = stored.feasible[rows]
    if bool((ok & ~was).any()):
        return False
    lost = int(np.count_nonzero(was & ~ok))
    if stored.count - lost < 2:
        return False
    stored.feasible[rows] = ok
    stored.count -= lost
    state.data[_LOST_KEY] = lost
    return True


_LOST_KEY = "batching.lost"


def _timed_rows(
    plugin: RowsPlugin,
    point: str,
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    rows: np.ndarray,
    timer: CycleTimer,
) -> RowsAnswer:
    """``plugin.batch_rows`` on ``rows``, timed as one call of ``point`` on a sampled cycle."""
    if not timer.sampled:
        return plugin.batch_rows(state, pod, cluster, rows)
    t0 = time.perf_counter()
    answer = plugin.batch_rows(state, pod, cluster, rows)
    timer.plugin(plugin.name, point, "Success", t0)
    return answer


def _rescore(
    stored: Stored, pod: Pod, cluster: ClusterCache, state: CycleState, rows: np.ndarray, timer: CycleTimer
) -> bool:
    """Raw scores of the row-accounting plugins patched on ``rows``, normalization redone when the
    feasible rows changed, the weighted sum patched or rebuilt; False when a score is out of range
    (the full cycle reports that error)."""
    lost = bool(state.data.get(_LOST_KEY, 0))
    if rows.size == 0:
        return True
    feasible = stored.feasible
    renormalized = False
    for part in stored.parts:
        if part.rows:
            got = _timed_rows(part.plugin, "Score", state, pod, cluster, rows, timer)  # type: ignore[arg-type]
            if got.scores is None or not isinstance(part.raw, np.ndarray) or not got.in_range:
                return False
            part.raw[rows] = got.scores
            if part.norm is None:
                part.scores = part.raw
        if part.norm is not None and (lost or part.rows):
            t0 = time.perf_counter() if timer.sampled else 0.0
            part.scores = part.norm.normalize_score(state, pod, part.raw, feasible)
            if timer.sampled:
                timer.plugin(part.plugin.name, "ScoreExtensionNormalize", "Success", t0)
            renormalized = True
            if not getattr(part.plugin, "scores_in_range", False) and batching.out_of_range(
                part.scores, feasible
            ):
                return False
    if renormalized:
        batching.resum(stored)
    else:
        batching.patch_total(stored, rows)
    return True
