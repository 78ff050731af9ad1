"""selectHost: the best-scoring feasible row, ties broken uniformly at random (seeded).

This module owns the best-row shortcut. A plugin that computes score arrays in the same sweep as
its filter (the fused resource pass) can leave a :class:`~ksched.framework.interface.BestRows` in
``state.best_rows``: where the weighted sum of its arrays peaks among its pass mask. The shortcut
is taken only when that provably describes the cycle's final choice (:func:`_hint_describes`);
otherwise the weighted sum is built and scanned. Both ways choose the same row for the same draw.
"""

from __future__ import annotations

import numpy as np

from ksched.framework import kernels
from ksched.framework.interface import MAX_NODE_SCORE, BestRows
from ksched.framework.result import CycleResult, weighted_sum
from ksched.framework.runtime.scoring import WeightedScores

_SAFE_TOTAL = 1 << 62


def select_row(
    result: CycleResult,
    scores: WeightedScores,
    feasible: np.ndarray,
    hint: BestRows | None,
    u: float,
    *,
    hint_allowed: bool,
    any_scorer: bool,
) -> int:
    """The chosen row for the uniform draw ``u`` in [0, 1).

    ``hint_allowed``: ``feasible`` is still the mask the hint's plugin produced and nobody asked
    for the full sums (an explanation). ``any_scorer``: the profile has Score plugins (without
    them every feasible row totals 1, as upstream's). Sets ``result.total``, built on first read
    when the shortcut made it unnecessary.
    """
    arrays, weights, const = scores.arrays, scores.weights, scores.const
    n = feasible.shape[0]
    if arrays and hint_allowed and hint is not None and _hint_describes(hint, feasible, scores):
        result.defer_total(arrays, weights, const, n)
        return _pick(hint, u)
    if arrays:
        total = weighted_sum(arrays, weights, const, n)
        result.total = total
        return kernels.select_best(total, feasible, u)
    result.total = const if any_scorer else 1
    return kernels.nth_true_ref(feasible, u)


def _hint_describes(hint: BestRows, feasible: np.ndarray, scores: WeightedScores) -> bool:
    """Whether ``hint`` ranks ``feasible``'s rows exactly as ``sum(w * a) + const`` would.

    Its rows are the feasible mask (identity); the same arrays (identity) with the same weights,
    in any order; and no int64 wrap-around: the feasible rows' scores are within 0..100 (the range
    check ran), so a small enough bound on the weights and ``const`` means adding ``const`` keeps
    the order.
    """
    if hint.rows is not feasible:
        return False
    arrays, weights = scores.arrays, scores.weights
    ha, hw = hint.arrays, hint.weights
    if len(arrays) != len(ha):
        return False
    if len(arrays) == 1:
        same = arrays[0] is ha[0] and weights[0] == hw[0]
    elif len(arrays) == 2:  # the usual case (Fit and BalancedAllocation): no sorting
        (a0, a1), (w0, w1) = arrays, weights
        same = (a0 is ha[0] and a1 is ha[1] and w0 == hw[0] and w1 == hw[1]) or (
            a0 is ha[1] and a1 is ha[0] and w0 == hw[1] and w1 == hw[0]
        )
    else:
        ours = sorted((id(a), w) for a, w in zip(arrays, weights, strict=True))
        same = ours == sorted((id(a), w) for a, w in zip(ha, hw, strict=True))
    if not same:
        return False
    bound = abs(scores.const)
    for w in weights:
        bound += MAX_NODE_SCORE * abs(w)
    return bound < _SAFE_TOTAL


def _pick(hint: BestRows, u: float) -> int:
    """``select_best``'s choice among ``hint``'s ties: the ``floor(u * ties)``-th in row order."""
    k = min(int(u * hint.ties), hint.ties - 1)
    if k == 0:
        return hint.first
    if k == hint.ties - 1:
        return hint.last
    return kernels.nth_best_row(hint.arrays, hint.weights, hint.rows, hint.best, k - 1, hint.first + 1)
