"""Where a framework's cycles report their cost and their plugin calls: one timer per profile.

Upstream observes ``scheduler_framework_extension_point_duration_seconds`` once per call of every
extension point's runner (PreFilter, PostFilter, PreScore, Score, Reserve, Unreserve, Permit,
PreBindPreFlight, PreBind, Bind, PostBind) and once per cycle for Filter over all nodes
(``findNodesThatPassFilters``, the nominated-pods pass included). It times each plugin call into
``scheduler_plugin_execution_duration_seconds`` only on sampled cycles (``pluginMetricsSamplePercent``,
10%). :class:`CycleTimer` does the same: every runner reports its point, and the plugin calls of one
cycle in :data:`SAMPLE_EVERY` are timed one by one. A vectorized plugin call answers for every node
at once, so a Filter or Score plugin observation is its time over all nodes, where upstream observes
one call per node.

``scheduler_plugin_evaluation_total`` counts what upstream's instrumented plugins count: a PreFilter
or PreScore call that did not return Skip, and a Filter or Score call per node. A vectorized call
stands for the nodes it answered for: a Filter plugin counts the nodes still feasible when it ran (a
node stops at its first failing plugin, as in upstream's per-node loop), among the nodes upstream's
walk would have processed; a Score plugin counts the nodes it scored. The counts live in plain
mappings the recorder hands out once (:attr:`CycleTimer.evaluations`); the runners add to them.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

SAMPLE_EVERY = 10
"""One cycle in ten times its plugin calls (upstream samples 10% of cycles)."""

UNNEEDED_BINDING_POINTS = ("Reserve", "Permit", "PreBindPreFlight", "PreBind")
"""The points a pod's binding cycle runs before Bind, for a pod none of whose plugins has work
(:meth:`~ksched.framework.runtime.Framework.needs_binding_cycle` said no)."""


class FrameworkRecorder(Protocol):
    """The metrics behind a framework (:class:`ksched.metrics.FrameworkMetrics`)."""

    def extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        """``scheduler_framework_extension_point_duration_seconds``."""

    def extension_points(
        self, profile: str, points: tuple[str, ...], statuses: tuple[str, ...], seconds: float
    ) -> None:
        """:meth:`extension_point` for several points that took the same ``seconds``."""

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        """``scheduler_plugin_execution_duration_seconds``."""

    def plugin_evaluations(self, profile: str, point: str) -> Counter[str]:
        """``scheduler_plugin_evaluation_total`` of one point: plugin name -> count, added to in place
        (only by the scheduling thread)."""

    def plugin_failed(self, plugin: str, point: str) -> None:
        """``ksched_plugin_errors_total``: an out-of-tree plugin raised or broke the contract."""


@dataclass(frozen=True, slots=True)
class Evaluations:
    """``scheduler_plugin_evaluation_total`` per point, plugin name -> count (see the module docstring)."""

    pre_filter: Counter[str]
    filter: Counter[str]
    pre_score: Counter[str]
    score: Counter[str]


class CycleTimer:
    """Extension-point durations on every cycle, plugin durations on sampled cycles.

    Without a recorder every method is a no-op costing one call and the evaluation counts go to
    mappings nobody reads, so explain, dry runs, tests and benchmarks of the framework alone pay
    nothing.
    """

    __slots__ = ("_cycles", "_profile", "_recorder", "evaluations", "recording", "sampled")

    def __init__(self, recorder: FrameworkRecorder | None, profile: str) -> None:
        self._recorder = recorder
        self._profile = profile
        self._cycles = 0
        self.recording = recorder is not None
        """Whether anything is recorded: the runners read it before taking a time."""
        self.sampled = False
        """Whether the current cycle times its plugin calls (read by the runners' loops)."""
        if recorder is None:
            self.evaluations = Evaluations(Counter(), Counter(), Counter(), Counter())
        else:
            counts = recorder.plugin_evaluations
            self.evaluations = Evaluations(
                counts(profile, "PreFilter"), counts(profile, "Filter"), counts(profile, "PreScore"),
                counts(profile, "Score"),
            )

    def start_cycle(self) -> None:
        """Decide whether the cycle now starting is one whose plugin calls are timed."""
        if self._recorder is None:
            return
        self._cycles += 1
        self.sampled = self._cycles % SAMPLE_EVERY == 0

    def now(self) -> float:
        """The start of a runner's call (0.0 when nothing is recorded: the caller may skip it)."""
        return time.perf_counter() if self._recorder is not None else 0.0

    def point(self, point: str, status: str, started: float) -> None:
        """One runner call of ``point`` that began at ``started`` (:meth:`now`) ended with ``status``."""
        rec = self._recorder
        if rec is not None:
            rec.extension_point(self._profile, point, status, time.perf_counter() - started)

    def points_without_work(self, points: tuple[str, ...], statuses: tuple[str, ...], started: float) -> None:
        """``points`` ran with nothing to do (no plugin had work for the pod): each is observed with
        the time since ``started`` that it took to find that out, as upstream observes runners whose
        plugins all return at once."""
        rec = self._recorder
        if rec is not None:
            rec.extension_points(self._profile, points, statuses, time.perf_counter() - started)

    def plugin(self, plugin: str, point: str, status: str, started: float) -> None:
        """One plugin call of a sampled cycle (the caller checks :attr:`sampled` first)."""
        rec = self._recorder
        if rec is not None:
            rec.plugin(plugin, point, status, time.perf_counter() - started)
