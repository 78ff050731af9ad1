"""PreFilter: once per cycle, before any node is looked at (upstream ``RunPreFilterPlugins``).

A plugin may skip its own Filter for the cycle (Skip), reject the pod outright, or narrow the
nodes Filter looks at (a :class:`PreFilterResult` with node names); the narrowed sets of several
plugins intersect, and an empty intersection rejects the pod with upstream's message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    FilterResult,
    PreFilterPlugin,
    Status,
)
from ksched.framework.result import CycleResult
from ksched.framework.runtime.timing import CycleTimer
from ksched.model.pod import Pod

log = logging.getLogger(__name__)


def run_pre_filter(
    plugins: Sequence[PreFilterPlugin],
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    result: CycleResult,
    valid: np.ndarray,
    timer: CycleTimer,
) -> np.ndarray | None:
    """The rows Filter starts from (``valid`` itself when nothing narrowed them), or None when
    PreFilter decided the cycle: ``result.status`` then says why (an error, or a rejection also
    kept as ``result.prefilter_rejection``)."""
    recording = timer.recording
    started = time.perf_counter() if recording else 0.0
    status, allowed, allowing = _call_all(plugins, state, pod, cluster, timer)
    if status is None and allowed is not None and not allowed:
        status = _empty_intersection(allowing)
    if status is not None:
        if recording:
            timer.point("PreFilter", status.code.label, started)
        result.status = status
        if status.code != Code.ERROR:
            result.prefilter_rejection = status
            result.feasible = np.zeros(valid.shape[0], dtype=np.bool_)
        return None
    if recording:
        timer.point("PreFilter", "Success", started)
    if allowed is None:
        return valid
    return _narrow(valid, allowed, allowing, cluster, result)


def _call_all(
    plugins: Sequence[PreFilterPlugin],
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    timer: CycleTimer,
) -> tuple[Status | None, frozenset[str] | None, list[str]]:
    """Call every PreFilter plugin in order: (the deciding status or None, the intersection of
    the node names the plugins allow or None, the plugins that narrowed)."""
    allowed: frozenset[str] | None = None
    allowing: list[str] = []
    rejection: Status | None = None
    sampled = timer.sampled
    evaluated = timer.evaluations.pre_filter
    for plugin in plugins:
        try:
            t0 = time.perf_counter() if sampled else 0.0
            pfr, status = plugin.pre_filter(state, pod, cluster)
            if sampled:
                timer.plugin(plugin.name, "PreFilter", status.code.label, t0)
        except Exception as exc:  # a plugin bug must not take the scheduler down
            if sampled:
                timer.plugin(plugin.name, "PreFilter", "Error", t0)
            evaluated[plugin.name] += 1
            log.exception("PreFilter plugin %s failed on %s", plugin.name, pod.key)
            msg = f'running PreFilter plugin "{plugin.name}": {exc}'
            return Status(Code.ERROR, (msg,), plugin.name), None, allowing
        if status is SUCCESS and pfr is None:
            evaluated[plugin.name] += 1
            continue  # the common case, without the enum comparisons below
        code = status.code
        if code == Code.SKIP:
            state.skip_filter.add(plugin.name)
            continue
        evaluated[plugin.name] += 1  # upstream counts every PreFilter call but a Skip
        if code == Code.ERROR:  # upstream wraps it: running PreFilter plugin "P": <its error>
            msg = f'running PreFilter plugin "{plugin.name}": {status.message}'
            return Status(Code.ERROR, (msg,), plugin.name), None, allowing
        if code.is_rejection:
            if rejection is None:
                rejection = status.with_plugin(plugin.name)
            if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                break
            continue
        if pfr is not None and pfr.node_names is not None:
            allowing.append(plugin.name)
            allowed = pfr.node_names if allowed is None else allowed & pfr.node_names
    return rejection, allowed, allowing


def _empty_intersection(allowing: list[str]) -> Status:
    if len(allowing) == 1:
        msg = f"node(s) didn't satisfy plugin {allowing[0]}"
    else:
        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(allowing)}] simultaneously"
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), allowing[0])


def _narrow(
    valid: np.ndarray,
    allowed: frozenset[str],
    allowing: list[str],
    cluster: ClusterCache,
    result: CycleResult,
) -> np.ndarray:
    """``valid`` cut to the allowed nodes; the others fail with the narrowing plugins' reason."""
    n = valid.shape[0]
    keep = np.zeros(n, dtype=np.bool_)
    row_of = cluster.nodes.row_of
    for name in allowed:
        row = row_of.get(name)
        if row is not None:
            keep[row] = True
    outside = valid & ~keep
    reason = f"node(s) didn't satisfy plugin(s) [{' '.join(allowing)}]"
    result.filters.append(
        (allowing[0], FilterResult.from_mask(outside, reason, Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
    )
    return valid & keep
