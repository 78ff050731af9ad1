"""PreScore, Score and NormalizeScore over the feasible rows (upstream ``RunPreScorePlugins`` and
``RunScorePlugins``).

A Score plugin returns one raw score per row, or a plain int when every node scores the same;
NormalizeScore maps the feasible rows' scores to 0..100. The runner checks the range, as upstream
does, unless the plugin declares its scores in range (:class:`~ksched.framework.hooks.ScoresInRange`),
and hands the weighted parts to :mod:`.select`: uniform scores are summed apart and added once,
instead of each allocating a new total array.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    NormalizeScorePlugin,
    PreScorePlugin,
    ScorePlugin,
    Scores,
    Status,
)
from ksched.framework.result import CycleResult, PluginScores
from ksched.framework.runtime.timing import CycleTimer
from ksched.model.pod import Pod

log = logging.getLogger(__name__)

Scorer = tuple[ScorePlugin, str, int, NormalizeScorePlugin | None]
"""A Score plugin of a profile: the plugin, its name, its weight and its NormalizeScore (or None)."""


@dataclass(slots=True)
class WeightedScores:
    """The cycle's scores, ready to be summed: ``sum(w * a) + const`` over ``arrays``/``weights``."""

    arrays: list[np.ndarray] = field(default_factory=list)
    weights: list[int] = field(default_factory=list)
    const: int = 0


def run_pre_score(
    plugins: Sequence[PreScorePlugin],
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    feasible: np.ndarray,
    timer: CycleTimer,
) -> Status:
    """SUCCESS, or the status that ends the cycle (an error). Skip removes the plugin's Score."""
    recording = timer.recording
    started = time.perf_counter() if recording else 0.0
    sampled = timer.sampled
    evaluated = timer.evaluations.pre_score
    for plugin in plugins:
        try:
            t0 = time.perf_counter() if sampled else 0.0
            status = plugin.pre_score(state, pod, cluster, feasible)
            if sampled:
                timer.plugin(plugin.name, "PreScore", status.code.label, t0)
        except Exception as exc:
            if sampled:
                timer.plugin(plugin.name, "PreScore", "Error", t0)
            evaluated[plugin.name] += 1
            log.exception("PreScore plugin %s failed on %s", plugin.name, pod.key)
            failed = Status(Code.ERROR, (f'running PreScore plugin "{plugin.name}": {exc}',), plugin.name)
            timer.point("PreScore", "Error", started)
            return failed
        if status is SUCCESS:
            evaluated[plugin.name] += 1
            continue
        if status.code == Code.SKIP:
            state.skip_score.add(plugin.name)
            continue
        evaluated[plugin.name] += 1  # upstream counts every PreScore call but a Skip
        if not status.ok:
            timer.point("PreScore", status.code.label, started)
            return status.with_plugin(plugin.name)
    if recording:
        timer.point("PreScore", "Success", started)
    return SUCCESS


def run_score(
    scorers: Sequence[Scorer],
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    feasible: np.ndarray,
    result: CycleResult,
    timer: CycleTimer,
    *,
    explain: bool,
    scored: int = 0,
    keep: list[tuple[ScorePlugin, int, NormalizeScorePlugin | None, Scores, Scores]] | None = None,
) -> WeightedScores | None:
    """Every Score plugin not skipped, normalized and range-checked; None on an error (then in
    ``result.status``). With ``explain`` each plugin's normalized scores go to ``result.scores``.
    ``scored``: the number of feasible rows, each an evaluation of every plugin that scores.
    ``keep`` receives each plugin's weight, raw and normalized scores, for
    opportunistic batching to reuse."""
    recording = timer.recording
    started = time.perf_counter() if recording else 0.0
    out = WeightedScores()
    skip = state.skip_score
    sampled = timer.sampled
    evaluated = timer.evaluations.score
    for plugin, name, weight, norm in scorers:
        if name in skip:
            continue
        evaluated[name] += scored
        t0 = time.perf_counter() if sampled else 0.0
        try:
            if sampled:
                scores = _scores_of(plugin, norm, state, pod, cluster, feasible, timer, weight, keep)
            else:
                raw = plugin.score(state, pod, cluster, feasible)
                scores = norm.normalize_score(state, pod, raw, feasible) if norm is not None else raw
                if keep is not None:
                    keep.append((plugin, weight, norm, raw, scores))
            # ScoresInRange (ksched.framework.hooks), read after each call: a plugin may set it per cycle.
            bad = None if getattr(plugin, "scores_in_range", False) else _out_of_range(scores, feasible)
        except Exception as exc:
            if timer.sampled:
                timer.plugin(name, "Score", "Error", t0)
            log.exception("Score plugin %s failed on %s", name, pod.key)
            result.status = Status(Code.ERROR, (f'running Score plugin "{name}": {exc}',), name)
            timer.point("Score", "Error", started)
            return None
        if bad is not None:
            msg = (
                f'plugin "{name}" returns an invalid score {bad}, '
                "it should in the range of [0, 100] after normalizing"
            )
            result.status = Status(Code.ERROR, (msg,), name)
            timer.point("Score", "Error", started)
            return None
        if explain:
            result.scores.append(PluginScores(name, weight, scores))
        if isinstance(scores, np.ndarray):
            out.arrays.append(scores)
            out.weights.append(weight)
        else:
            out.const += int(scores) * weight
    if recording:
        timer.point("Score", "Success", started)
    return out


def _scores_of(
    plugin: ScorePlugin,
    norm: NormalizeScorePlugin | None,
    state: CycleState,
    pod: Pod,
    cluster: ClusterCache,
    feasible: np.ndarray,
    timer: CycleTimer,
    weight: int = 0,
    keep: list[tuple[ScorePlugin, int, NormalizeScorePlugin | None, Scores, Scores]] | None = None,
) -> Scores:
    """One plugin's Score, then its NormalizeScore, timed one by one on sampled cycles (``keep``:
    as :func:`run_score`'s)."""
    if not timer.sampled:
        raw = plugin.score(state, pod, cluster, feasible)
        scores = norm.normalize_score(state, pod, raw, feasible) if norm is not None else raw
    else:
        t0 = time.perf_counter()
        raw = plugin.score(state, pod, cluster, feasible)
        timer.plugin(plugin.name, "Score", "Success", t0)
        scores = raw
        if norm is not None:
            t0 = time.perf_counter()
            scores = norm.normalize_score(state, pod, raw, feasible)
            timer.plugin(plugin.name, "ScoreExtensionNormalize", "Success", t0)
    if keep is not None:
        keep.append((plugin, weight, norm, raw, scores))
    return scores


def _out_of_range(scores: Scores, feasible: np.ndarray) -> int | None:
    """The first score outside 0..100 on a feasible row (the lowest, else the highest), or None."""
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
