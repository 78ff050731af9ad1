"""Where a framework's cycles report their cost: one timer per profile, used by every runner.

Upstream observes ``scheduler_framework_extension_point_duration_seconds`` for every call of an
extension point's runner (PreFilter, PostFilter, PreScore, Score, Reserve, Unreserve, Permit,
PreBind, Bind, PostBind; Filter runs per node there and has no such observation), and
``scheduler_plugin_execution_duration_seconds`` for each plugin call only on sampled cycles
(``pluginMetricsSamplePercent``, 10%). :class:`CycleTimer` does the same: every runner reports its
point, and the plugin calls of one cycle in :data:`SAMPLE_EVERY` are timed one by one.

A vectorized plugin call answers for every node at once, so a Filter plugin observation is its
time over all nodes, where upstream observes one call per node.
"""

from __future__ import annotations

import time
from typing import Protocol

SAMPLE_EVERY = 10
"""One cycle in ten times its plugin calls (upstream samples 10% of cycles)."""


class FrameworkRecorder(Protocol):
    """The metrics behind a framework (:class:`ksched.metrics.FrameworkMetrics`)."""

    def extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        """``scheduler_framework_extension_point_duration_seconds``."""

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        """``scheduler_plugin_execution_duration_seconds``."""

    def plugin_failed(self, plugin: str, point: str) -> None:
        """``ksched_plugin_errors_total``: an out-of-tree plugin raised or broke the contract."""


class CycleTimer:
    """Extension-point durations on every cycle, plugin durations on sampled cycles.

    Without a recorder every method is a no-op costing one call, so explain, tests and
    benchmarks of the framework alone pay nothing.
    """

    __slots__ = ("_cycles", "_profile", "_recorder", "recording", "sampled")

    def __init__(self, recorder: FrameworkRecorder | None, profile: str) -> None:
        self._recorder = recorder
        self._profile = profile
        self._cycles = 0
        self.recording = recorder is not None
        """Whether anything is recorded: the runners read it before taking a time."""
        self.sampled = False
        """Whether the current cycle times its plugin calls (read by the runners' loops)."""

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

    def plugin(self, plugin: str, point: str, status: str, started: float) -> None:
        """One plugin call of a sampled cycle (the caller checks :attr:`sampled` first)."""
        rec = self._recorder
        if rec is not None:
            rec.plugin(plugin, point, status, time.perf_counter() - started)
