"""TaintToleration filter and score over every node at once, on the node table's taint bitsets.

Every distinct taint in the cluster has an interned id; a node's taints are a ``uint64`` bitset
(``NodeTable.taint_bits``). A pod's tolerations become one bitset of the taint ids they tolerate, so
the filter is ``any(node_bits & hard & ~tolerated)`` per row and the score is a popcount. API
validation forbids two taints with the same key and effect on one node, so a bitset loses nothing
against upstream's walk over ``node.spec.taints``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ksched.cache.node_table import HARD_TAINT_EFFECTS
from ksched.framework import names
from ksched.framework.api import (
    SUCCESS,
    ClusterEventSpec,
    ClusterReader,
    Code,
    CycleState,
    FilterResult,
    Handle,
    Scores,
    Status,
    cluster_event,
)
from ksched.framework.interface import HintFn
from ksched.framework.normalize import default_normalize_score
from ksched.framework.plugins.tainttoleration import hints
from ksched.model.pod import Pod
from ksched.model.selectors import Taint, Toleration

NAME: Final = names.TAINT_TOLERATION
ERR_REASON_NOT_MATCH: Final = "node(s) had untolerated taint(s)"
"""v1.35 text (upstream PR #134740); older releases named the taint, which ``explain_row`` still does."""
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
PRE_SCORE_STATE_KEY: Final = f"PreScore{NAME}"


def _tolerated_bits(cluster: ClusterReader, tolerations: Sequence[Toleration]) -> np.ndarray:
    """Bitset of interned taints that at least one of ``tolerations`` tolerates."""

    def tolerated(taint: Taint) -> bool:
        return any(t.tolerates(taint) for t in tolerations)

    return cluster.nodes.tolerated_mask(tolerated)


def _popcount_rows(words: np.ndarray) -> np.ndarray:
    """Number of set bits per row of a 2-D ``uint64`` array, as ``int64``."""
    counter = getattr(np, "bitwise_count", None)
    if counter is not None:
        return counter(words).sum(axis=1, dtype=np.int64)  # type: ignore[no-any-return]
    as_bytes = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1).sum(axis=1, dtype=np.int64)


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """Upstream ``getAllTolerationPreferNoSchedule``: tolerations with an empty or PreferNoSchedule effect."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


class _ClusterMasks:
    """Per-cluster taint masks, valid for one ``(node table, generation)``.

    The hard and soft masks (and whether any node carries such a taint at all) change only when a
    node does, which bumps ``NodeTable.generation``; tolerated masks also depend only on the
    interned taints, so they are kept per distinct toleration tuple for the same generation.
    Rebuilding them each cycle was a Python loop over the interned taints plus numpy ``any``
    calls, twice per cycle.
    """

    __slots__ = ("generation", "hard", "hard_any", "nodes", "soft", "soft_any", "tolerated")

    def __init__(self, nodes: Any) -> None:
        self.nodes = nodes
        self.generation = nodes.generation
        self.hard = nodes.taint_mask(HARD_TAINT_EFFECTS)
        self.hard_any = bool(self.hard.any())
        self.soft = nodes.taint_mask((PREFER_NO_SCHEDULE,))
        self.soft_any = bool(self.soft.any())
        self.tolerated: dict[tuple[Toleration, ...], np.ndarray] = {}


TOLERATED_CACHE_SIZE: Final = 256


class TaintToleration:
    """Filter: untolerated NoSchedule/NoExecute taint → UnschedulableAndUnresolvable.

    Score: count of untolerated PreferNoSchedule taints, normalized in reverse (fewer is better).
    """

    name = NAME
    scores_in_range = True

    def __init__(self) -> None:
        self._masks: _ClusterMasks | None = None

    def _cluster_masks(self, cluster: ClusterReader) -> _ClusterMasks:
        nodes = cluster.nodes
        masks = self._masks
        if masks is None or masks.nodes is not nodes or masks.generation != nodes.generation:
            masks = self._masks = _ClusterMasks(nodes)
        return masks

    def _tolerated(
        self, masks: _ClusterMasks, cluster: ClusterReader, tolerations: tuple[Toleration, ...]
    ) -> np.ndarray:
        found = masks.tolerated.get(tolerations)
        if found is None:
            if len(masks.tolerated) >= TOLERATED_CACHE_SIZE:
                masks.tolerated.clear()
            found = masks.tolerated[tolerations] = _tolerated_bits(cluster, tolerations)
        return found

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        masks = self._cluster_masks(cluster)
        if not masks.hard_any:
            return FilterResult.all_pass()
        nodes = cluster.nodes
        untolerated = masks.hard & ~self._tolerated(masks, cluster, tuple(pod.tolerations))
        if not untolerated.any():
            return FilterResult.all_pass()
        fails = np.any(nodes.taint_bits[: nodes.n_rows] & untolerated, axis=1)
        return FilterResult.from_mask(fails, ERR_REASON_NOT_MATCH, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """The first untolerated hard taint in the node's spec order (what releases before 1.35 printed)."""
        node = cluster.nodes.nodes[row]
        if node is None:
            return None
        for taint in node.taints:
            if taint.effect in HARD_TAINT_EFFECTS and not any(t.tolerates(taint) for t in pod.tolerations):
                return f"untolerated taint {{{taint.key}: {taint.value}}}"
        return None

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Status:
        """Keep the tolerations that can matter for PreferNoSchedule taints; never skips, as upstream."""
        tolerations = pod.tolerations
        state.data[PRE_SCORE_STATE_KEY] = prefer_no_schedule_tolerations(tolerations) if tolerations else ()
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        tolerations = state.read(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            tolerations = prefer_no_schedule_tolerations(pod.tolerations)
        nodes = cluster.nodes
        masks = self._cluster_masks(cluster)
        if not masks.soft_any:
            return 0
        untolerated = masks.soft & ~self._tolerated(masks, cluster, tuple(tolerations))
        if not untolerated.any():
            return 0
        return _popcount_rows(nodes.taint_bits[: nodes.n_rows] & untolerated)

    def normalize_score(self, state: CycleState, pod: Pod, scores: Scores, feasible: np.ndarray) -> Scores:
        return default_normalize_score(scores, feasible, reverse=True)

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: a new or re-tainted node, or a new
        toleration of the pod itself (no UpdateNodeLabel, which stands in for a missed Node/Add
        only without queueing hints)."""
        return {
            cluster_event("Node", "Add", "UpdateNodeTaint"): hints.after_node_change,
            cluster_event("Pod", "UpdatePodToleration"): hints.after_pod_toleration_change,
        }


def new(args: Any, handle: Handle) -> TaintToleration:
    return TaintToleration()


if TYPE_CHECKING:
    from ksched.framework.api import FilterPlugin, NormalizeScorePlugin, PreScorePlugin, ScorePlugin

    _conforms: tuple[FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin] = (
        TaintToleration(),
        TaintToleration(),
        TaintToleration(),
        TaintToleration(),
    )
