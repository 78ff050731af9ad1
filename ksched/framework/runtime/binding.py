"""The binding cycle's extension points: Reserve, Unreserve, Permit, PreBindPreFlight, PreBind,
PostBind.

The scheduler's binding cycle (:mod:`ksched.scheduler.binding_cycle`) decides when each runs; these
runners decide how: plugins in configured order, a plugin that raises or returns something other
than a Status is an error naming it (upstream's ``running Reserve plugin "P": ...``), and every run
reports its extension point's duration.

PreBind may be suspended: a plugin that returns a
:class:`~ksched.framework.api.PendingPreBind` stops the run there with a :class:`PreBindWait`; the
binding cycle polls it (:func:`poll_pre_bind`) and hands its outcome to :func:`resume_pre_bind`,
which checks it like a returned Status and goes on with the next plugin. The PreBind duration then
spans the wait, as upstream's synchronous PreBind does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ksched.framework.api import PendingPreBind, PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from ksched.framework.interface import SKIP, SUCCESS, Code, CycleState, Status, is_pending_pre_bind
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


@dataclass(slots=True)
class PreBindWait:
    """Where a PreBind run stopped: the plugin at ``index`` returned ``pending``."""

    index: int
    plugin: Any
    pending: PendingPreBind
    started: float
    """The run's start (:meth:`CycleTimer.now`), for the PreBind duration."""
    plugin_started: float
    """``perf_counter()`` when the plugin was called, for its duration on sampled cycles."""
    raised: bool = False
    """Whether the last poll raised (its outcome is then the error already)."""


def run_pre_bind_pre_flights(
    plugins: Sequence[PreBindPlugin], state: CycleState, pod: Pod, node: str, timer: CycleTimer
) -> Status:
    """Upstream ``RunPreBindPreFlights``: SUCCESS when some PreBind plugin will act, SKIP when none
    will, or an error. Plugins that say Skip go to ``state.skip_pre_bind``; a plugin without the
    method counts as one that will act."""
    started = timer.now()
    result = SKIP
    skipped: set[str] = set()
    for plugin in plugins:
        fn = getattr(plugin, "pre_bind_pre_flight", None)
        if fn is None:
            result = SUCCESS
            continue
        try:
            status = fn(state, pod, node)
        except Exception as exc:
            log.error("PreBindPreFlight plugin %s failed: %s", plugin.name, exc, exc_info=exc)
            status = Status(Code.ERROR, (str(exc),))
        if not isinstance(status, Status):
            status = Status(Code.ERROR, (f"returned {status!r}, expected a Status",))
        if status.code == Code.ERROR:
            msg = f'running PreBindPreFlight "{plugin.name}": {status.message}'
            result = Status(Code.ERROR, (msg,), plugin.name)
            break
        if status.ok:
            result = SUCCESS
        elif status.code == Code.SKIP:
            skipped.add(plugin.name)
        else:
            msg = (
                f'PreBindPreFlight {plugin.name} returned "{status.code.label}", which is unsupported. '
                "It is supposed to return Success, Skip, or Error status"
            )
            result = Status(Code.ERROR, (msg,), plugin.name)
            break
    else:
        state.skip_pre_bind = skipped
    timer.point("PreBindPreFlight", result.code.label, started)
    return result


def run_pre_bind(
    plugins: Sequence[PreBindPlugin],
    state: CycleState,
    pod: Pod,
    node: str,
    timer: CycleTimer,
    *,
    start: int = 0,
    started: float | None = None,
) -> Status | PreBindWait:
    """PreBind on every plugin from ``start`` in order, less those in ``state.skip_pre_bind``. The
    first failure ends it (the caller unreserves); a plugin that returns a PendingPreBind
    suspends it (a :class:`PreBindWait`: poll it, then :func:`resume_pre_bind`)."""
    t_run = timer.now() if started is None else started
    for i in range(start, len(plugins)):
        plugin = plugins[i]
        if plugin.name in state.skip_pre_bind:
            continue
        t0 = time.perf_counter()
        try:
            out: Any = plugin.pre_bind(state, pod, node)
        except Exception as exc:
            status = _error("PreBind", plugin.name, exc)
            timer.point("PreBind", status.code.label, t_run)
            return status
        if not isinstance(out, Status) and is_pending_pre_bind(out):
            return PreBindWait(i, plugin, out, t_run, t0)
        status = _checked("PreBind", plugin, state, timer, out, t0)
        if not status.ok:
            timer.point("PreBind", status.code.label, t_run)
            return status
    timer.point("PreBind", "Success", t_run)
    return SUCCESS


def poll_pre_bind(wait: PreBindWait, now: float) -> Status | None:
    """Poll the suspended plugin: its outcome, None while it is not done, an error if it raised."""
    try:
        return wait.pending.poll(now)
    except Exception as exc:
        wait.raised = True
        return _error("PreBind", wait.plugin.name, exc)


def resume_pre_bind(
    plugins: Sequence[PreBindPlugin],
    state: CycleState,
    pod: Pod,
    node: str,
    timer: CycleTimer,
    wait: PreBindWait,
    outcome: Status,
) -> Status | PreBindWait:
    """Take the suspended plugin's ``outcome`` as its PreBind status and go on with the next one."""
    status = (
        outcome
        if wait.raised
        else _checked("PreBind", wait.plugin, state, timer, outcome, wait.plugin_started)
    )
    if not status.ok:
        timer.point("PreBind", status.code.label, wait.started)
        return status
    return run_pre_bind(plugins, state, pod, node, timer, start=wait.index + 1, started=wait.started)


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
    return _checked(point, plugin, state, timer, status, t0)


def _checked(
    point: str, plugin: Any, state: CycleState, timer: CycleTimer, status: object, t0: float
) -> Status:
    """What a plugin's result counts as (see :func:`_status_of`)."""
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
