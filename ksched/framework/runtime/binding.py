"""The binding cycle's extension points: Reserve, Unreserve, Permit, PreBind, PostBind.

The scheduler's binding cycle (:mod:`ksched.scheduler.binding_cycle`) decides when each runs; these
runners decide how: plugins in configured order, a plugin that raises or returns something other
than a Status is an error naming it (upstream's ``running Reserve plugin "P": ...``), and every run
reports its extension point's duration.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ksched.framework.api import PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from ksched.framework.interface import SUCCESS, Code, CycleState, Status
from ksched.framework.runtime.timing import CycleTimer
from ksched.framework.waiting import MAX_PERMIT_TIMEOUT_S
from ksched.model.pod import Pod

log = logging.getLogger(__name__)


def run_reserve(
    plugins: Sequence[ReservePlugin], state: CycleState, pod: Pod, node: str, timer: CycleTimer
) -> Status:
    """Reserve on every plugin in order; the first failure ends it (the caller unreserves)."""
    return _until_failure("Reserve", plugins, state, timer, lambda p: p.reserve(state, pod, node))


def run_unreserve(
    plugins: Sequence[ReservePlugin], state: CycleState, pod: Pod, node: str, timer: CycleTimer
) -> None:
    """Unreserve on every Reserve plugin in reverse order; a failing one is logged, the rest still run."""
    _every_one("Unreserve", reversed(plugins), pod, timer, lambda p: p.unreserve(state, pod, node))


def run_permit(
    plugins: Sequence[PermitPlugin], state: CycleState, pod: Pod, node: str, timer: CycleTimer
) -> tuple[Status, dict[str, float]]:
    """(SUCCESS, {}) to bind now; (SUCCESS, {plugin: timeout_s}) to wait on those plugins; or the
    first rejection or error (with no waits)."""
    started = timer.now()
    waits: dict[str, float] = {}
    outcome = SUCCESS
    for plugin in plugins:
        status, timeout = _permit(plugin, state, pod, node)
        if status.code == Code.WAIT:
            waits[plugin.name] = timeout
        elif not status.ok:
            outcome, waits = status, {}
            break
    label = "Wait" if waits else outcome.code.label
    timer.point("Permit", label, started)
    return outcome, waits


def run_pre_bind(
    plugins: Sequence[PreBindPlugin], state: CycleState, pod: Pod, node: str, timer: CycleTimer
) -> Status:
    """PreBind on every plugin in order; the first failure ends it (the caller unreserves)."""
    return _until_failure("PreBind", plugins, state, timer, lambda p: p.pre_bind(state, pod, node))


def run_post_bind(
    plugins: Sequence[PostBindPlugin], state: CycleState, pod: Pod, node: str, timer: CycleTimer
) -> None:
    """PostBind on every plugin (informational: failures are logged)."""
    _every_one("PostBind", plugins, pod, timer, lambda p: p.post_bind(state, pod, node))


def _every_one(
    point: str, plugins: Iterable[Any], pod: Pod, timer: CycleTimer, call: Callable[[Any], object]
) -> None:
    """``call`` on every plugin; one that raises is logged and the others still run."""
    started = timer.now()
    for plugin in plugins:
        try:
            call(plugin)
        except Exception:
            log.exception("%s plugin %s failed on %s", point, plugin.name, pod.key)
    timer.point(point, "Success", started)


def _until_failure(
    point: str, plugins: Sequence[Any], state: CycleState, timer: CycleTimer, call: Callable[[Any], object]
) -> Status:
    """``call`` on every plugin in order until one does not succeed; that status, or SUCCESS."""
    started = timer.now()
    status = SUCCESS
    for plugin in plugins:
        status = _status_of(point, plugin, state, timer, lambda p=plugin: call(p))
        if not status.ok:
            break
    timer.point(point, status.code.label, started)
    return status


def _permit(plugin: PermitPlugin, state: CycleState, pod: Pod, node: str) -> tuple[Status, float]:
    try:
        out = plugin.permit(state, pod, node)
        status, timeout = out if isinstance(out, tuple) else (out, 0.0)
    except Exception as exc:
        return _error("Permit", plugin.name, exc), 0.0
    if not isinstance(status, Status):
        return _error("Permit", plugin.name, TypeError(f"returned {status!r}, expected a Status")), 0.0
    if status.code == Code.WAIT:
        return status, min(float(timeout), MAX_PERMIT_TIMEOUT_S)
    if status.ok or status.code.is_rejection:
        return status.with_plugin(plugin.name), 0.0
    msg = f'running Permit plugin "{plugin.name}": {status.message}'
    return Status(Code.ERROR, (msg,), plugin.name), 0.0


def _status_of(
    point: str, plugin: Any, state: CycleState, timer: CycleTimer, call: Callable[[], object]
) -> Status:
    """One plugin call's status, an error naming the plugin when it raised or returned no Status;
    timed when the pod's scheduling cycle was a sampled one (``state.sampled``, as upstream's
    ``ShouldRecordPluginMetrics``)."""
    t0 = time.perf_counter()
    try:
        status = call()
    except Exception as exc:
        return _error(point, plugin.name, exc)
    if state.sampled:
        timer.plugin(plugin.name, point, getattr(getattr(status, "code", None), "label", "Error"), t0)
    if not isinstance(status, Status):
        return _error(point, plugin.name, TypeError(f"returned {status!r}, expected a Status"))
    if status.ok or status.code.is_rejection:
        return status.with_plugin(plugin.name)
    return Status(Code.ERROR, (f'running {point} plugin "{plugin.name}": {status.message}',), plugin.name)


def _error(point: str, plugin: str, exc: Exception) -> Status:
    log.error("%s plugin %s failed: %s", point, plugin, exc, exc_info=exc)
    return Status(Code.ERROR, (f'running {point} plugin "{plugin}": {exc}',), plugin)
