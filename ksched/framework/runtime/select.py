"""selectHost: the best-scoring feasible row, ties broken uniformly at random (seeded).

The best-row shortcut (:mod:`ksched.framework.best_rows`) is taken only when the hint a fused sweep
left provably describes the cycle's final choice; otherwise the weighted sum is built and scanned.
Both ways choose the same row for the same draw.
"""

from __future__ import annotations

import numpy as np

from ksched.framework import best_rows, kernels
from ksched.framework.best_rows import BestRows
from ksched.framework.result import CycleResult, weighted_sum
from ksched.framework.runtime.scoring import WeightedScores


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
    if (
        arrays
        and hint_allowed
        and hint is not None
        and best_rows.describes(hint, feasible, arrays, weights, const)
    ):
        result.defer_total(arrays, weights, const, n)
        return best_rows.pick(hint, u)
    if arrays:
        total = weighted_sum(arrays, weights, const, n)
        result.total = total
        return kernels.select_best(total, feasible, u)
    result.total = const if any_scorer else 1
    return kernels.nth_true_ref(feasible, u)
