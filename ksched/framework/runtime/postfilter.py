"""PostFilter: after a cycle found no feasible node (upstream ``RunPostFilterPlugins``).

Like upstream, the first plugin whose result is not "Unschedulable" decides; otherwise the
rejections are merged: the last result that sets the nomination, and the messages. The status names
the plugin whose message it carries (pass it to
:func:`~ksched.framework.messages.fit_error_message`, which adds DefaultPreemption's
``preemption: `` prefix).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ksched.cache.cluster import ClusterCache
from ksched.framework import names
from ksched.framework.interface import (
    Code,
    CycleState,
    NominatedPods,
    PostFilterPlugin,
    PostFilterResult,
    Status,
)
from ksched.framework.messages import PREEMPTION_PREFIX
from ksched.framework.result import CycleResult
from ksched.framework.runtime.timing import CycleTimer
from ksched.model.pod import Pod

log = logging.getLogger(__name__)


def run_post_filter(
    plugins: Sequence[PostFilterPlugin],
    score_weights: Mapping[str, int],
    pod: Pod,
    cluster: ClusterCache,
    result: CycleResult,
    nominated: NominatedPods | None,
    timer: CycleTimer,
) -> PostFilterResult:
    """The PostFilter plugins' verdict on a pod no node could take (``plugins`` is not empty)."""
    started = timer.now()
    out = _run(plugins, score_weights, pod, cluster, result, nominated, timer)
    timer.point("PostFilter", out.status.code.label, started)
    return out


def _run(
    plugins: Sequence[PostFilterPlugin],
    score_weights: Mapping[str, int],
    pod: Pod,
    cluster: ClusterCache,
    result: CycleResult,
    nominated: NominatedPods | None,
    timer: CycleTimer,
) -> PostFilterResult:
    state = CycleState(score_weights=score_weights)
    kept: PostFilterResult | None = None
    said: list[tuple[str, tuple[str, ...]]] = []  # (plugin, reasons) of rejections with a message
    rejector = ""
    sampled = timer.sampled
    for plugin in plugins:
        try:
            t0 = time.perf_counter() if sampled else 0.0
            pfr = plugin.post_filter(state, pod, cluster, result, nominated)
            if sampled:
                timer.plugin(plugin.name, "PostFilter", pfr.status.code.label, t0)
        except Exception as exc:  # a plugin bug must not take the scheduler down
            if sampled:
                timer.plugin(plugin.name, "PostFilter", "Error", t0)
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
