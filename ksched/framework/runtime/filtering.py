"""Filter: which nodes can take the pod (upstream ``findNodesThatPassFilters`` and
``RunFilterPluginsWithNominatedPods``), over every row at once.

Each Filter plugin returns a failure bitset per row; the feasible rows are the valid rows no
plugin failed. Differences from upstream that do not change decisions: every node is filtered (the
early stop of ``percentageOfNodesToScore`` is read off the result afterwards, :mod:`.sampling`),
and a node's first failing plugin is worked out afterwards from the per-plugin bitsets, in
configured order, which is what upstream's per-node loop reports.

The two-pass rule for nominated pods runs after the plain pass, on the rows still feasible
(:class:`~ksched.framework.nominated_pass.NominatedPass`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels
from ksched.framework.interface import Code, CycleState, FilterPlugin, NominatedPods, Status
from ksched.framework.nominated_pass import NominatedPass
from ksched.framework.result import CycleResult
from ksched.framework.runtime.timing import CycleTimer
from ksched.model.pod import Pod

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Fit:
    """What Filter left of a cycle's rows."""

    feasible: np.ndarray
    """bool[n_rows]: the rows that passed every Filter plugin (the caller may mutate it)."""
    count: int
    """How many rows are feasible."""
    adopted: bool
    """Whether ``feasible`` is a Filter plugin's own ``passed`` mask, unchanged since: the mask a
    best-row hint the plugin left (``state.best_rows``) can describe."""
    ran: list[str]
    """The Filter plugins that ran, in order (preemption asks whether all are row-local)."""
    reached: list[int]
    """For each plugin in ``ran``: how many rows were still feasible when it ran (upstream calls a
    Filter plugin once per node that passed the plugins before it). The runner has counted them as
    the plugins' evaluations; a cycle that processed other nodes corrects the counts."""
    failures: list[np.ndarray | None]
    """For each plugin in ``ran``: its failure bits per row (None: every row passed)."""
    narrowed: np.ndarray | None = None
    """The rows a PreFilter result allowed, when it narrowed the nodes (None: every valid row)."""


def run_filters(
    plugins: Sequence[FilterPlugin],
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    result: CycleResult,
    start: np.ndarray,
    timer: CycleTimer,
) -> Fit | None:
    """Every Filter plugin over the rows ``start`` (``result.valid`` when PreFilter narrowed
    nothing). Failing plugins' bitsets go to ``result.filters``. None when a plugin raised
    (``result.status`` is then the error)."""
    valid = result.valid
    n = start.shape[0]
    feasible = start
    count = -1
    adopted: np.ndarray | None = None  # a filter's ``passed`` mask, taken over as ``feasible``
    skip = state.skip_filter
    sampled = timer.sampled
    ran: list[str] = []
    reached: list[int] = []
    failures: list[np.ndarray | None] = []
    left = len(cluster.nodes) if start is valid else int(np.count_nonzero(start))
    evaluated = timer.evaluations.filter
    for plugin in plugins:
        name = plugin.name
        if name in skip:
            continue
        ran.append(name)
        judged = left if count < 0 else count
        reached.append(judged)
        evaluated[name] += judged
        try:
            t0 = time.perf_counter() if sampled else 0.0
            fr = plugin.filter(state, pod, cluster)
            if sampled:
                timer.plugin(name, "Filter", "Success", t0)
        except Exception as exc:
            if sampled:
                timer.plugin(name, "Filter", "Error", t0)
            log.exception("Filter plugin %s failed on %s", name, pod.key)
            result.status = Status(Code.ERROR, (f'running "{name}" filter plugin: {exc}',), name)
            return None
        failures.append(fr.failed)
        if fr.failed is not None:
            result.filters.append((name, fr))
        if fr.passed is not None and feasible is valid:
            # Nothing narrowed the valid rows yet, so the plugin's pass mask is the answer.
            feasible = adopted = fr.passed
            count = fr.n_passed
        elif fr.failed is not None:
            if feasible is valid or feasible is adopted or feasible is start:
                feasible = feasible.copy()  # never mutate the plugin's, the snapshot's or PreFilter's array
                adopted = None
            count = kernels.drop_failed(feasible, fr.failed, n)
    if feasible is valid:
        feasible = valid.copy()  # callers may mutate result.feasible; result.valid must not change
    narrowed = None if start is valid else start
    return Fit(feasible, count, adopted is not None, ran, reached, failures, narrowed)


def with_nominated_pods(
    fit: Fit,
    nominated_pass: NominatedPass,
    nominated: NominatedPods,
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    result: CycleResult,
    *,
    keep_reasons: bool,
) -> None:
    """Upstream's two-pass rule on the rows ``fit`` holds: a row with nominated pods of at least
    the pod's priority stays feasible only if it also passes with those pods counted there.

    The pass's reasons are merged into ``result.filters`` only when someone reads them: when
    ``keep_reasons`` (a dry run, an explanation) or when no row is left.
    """
    hint = state.best_rows
    if hint is not None and not (fit.adopted and hint.rows is fit.feasible):
        hint = None
    narrowed = nominated_pass.narrow(pod, cluster, nominated, fit.feasible, result, state, hint)
    if narrowed is None:
        return
    if narrowed.changed:
        state.best_rows = narrowed.hint
        fit.feasible = narrowed.feasible
        fit.adopted = narrowed.hint is not None
        fit.count = -1
    if fit.count < 0:
        fit.count = int(np.count_nonzero(fit.feasible))
    if keep_reasons or fit.count == 0:
        narrowed.finish()


def reached_on(fit: Fit, rows: np.ndarray) -> list[int]:
    """For each plugin in ``fit.ran``: how many of ``rows`` were still feasible when it ran, as
    upstream's per-node loop calls it (the nodes upstream's walk processed, or its one nominated
    node)."""
    alive = np.ones(rows.shape[0], dtype=np.bool_)
    out: list[int] = []
    for failed in fit.failures:
        out.append(int(np.count_nonzero(alive)))
        if failed is not None:
            alive &= failed[rows] == 0
    return out
