"""The best-row shortcut, in one place: where a fused sweep says the best rows are, how that is
kept true when rows drop out, and when the cycle may pick from it instead of summing and scanning.

The fused resource pass computes its score arrays in the same sweep as its filter, so it can find
where their weighted sum peaks for almost nothing and leave a :class:`BestRows` in
``CycleState.best_rows``. The nominated-pods pass drops a few rows afterwards and keeps the hint
true for what is left (:func:`without_rows`). selectHost (:mod:`ksched.framework.runtime.select`)
picks from it only when :func:`describes` proves it ranks the cycle's final candidates exactly as
the weighted sum would; both ways choose the same row for the same draw (:func:`pick`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksched.framework import kernels

MAX_SCORE = 100
"""Upstream ``framework.MaxNodeScore``: the range check has run, so no score is above it."""
_SAFE_TOTAL = 1 << 62


@dataclass(frozen=True, slots=True)
class BestRows:
    """Where the maximum of a weighted sum of score arrays lies among the rows of ``rows``.

    A plugin that computes score arrays in the same sweep as a filter (the fused resource pass)
    can find this for almost nothing and leave it in :attr:`CycleState.best_rows`. The runtime
    uses it instead of summing and scanning only when it provably describes the cycle's final
    choice: the feasible mask *is* ``rows`` (the filter's ``passed`` mask, unchanged since), and
    the score plugins' array outputs are exactly ``arrays`` (identity) with ``weights``; every
    other plugin scored a plain int.

    ``best`` is ``sum(w * a[row])`` at its maximum (int64), ``ties`` how many rows reach it, the
    first and last of which are ``first`` and ``last`` (rows in order).
    """

    arrays: tuple[np.ndarray, ...]
    weights: tuple[int, ...]
    rows: np.ndarray
    best: int
    ties: int
    first: int
    last: int


def describes(
    hint: BestRows, feasible: np.ndarray, arrays: list[np.ndarray], weights: list[int], const: int
) -> bool:
    """Whether ``hint`` ranks ``feasible``'s rows exactly as ``sum(w * a) + const`` would.

    Its rows are the feasible mask (identity); the same arrays (identity) with the same weights,
    in any order; and no int64 wrap-around: the feasible rows' scores are within 0..100 (the range
    check ran), so a small enough bound on the weights and ``const`` means adding ``const`` keeps
    the order.
    """
    if hint.rows is not feasible:
        return False
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
    bound = abs(const)
    for w in weights:
        bound += MAX_SCORE * abs(w)
    return bound < _SAFE_TOTAL


def pick(hint: BestRows, u: float) -> int:
    """``select_best``'s choice among ``hint``'s ties: the ``floor(u * ties)``-th in row order."""
    k = min(int(u * hint.ties), hint.ties - 1)
    if k == 0:
        return hint.first
    if k == hint.ties - 1:
        return hint.last
    return kernels.nth_best_row(hint.arrays, hint.weights, hint.rows, hint.best, k - 1, hint.first + 1)


def without_rows(
    feasible: np.ndarray, rows: np.ndarray, hint: BestRows | None
) -> tuple[np.ndarray | None, BestRows | None]:
    """``feasible`` without ``rows`` (None when every such row had failed already), and ``hint``
    for what is left (None when it no longer says where the best rows are).

    A dropped row that scored below the best changes nothing; one that tied for it is one tie
    fewer, unless it was the first or the last tie (then the full sum and scan decide). Without
    this every cycle on a cluster with nominations would sum and scan all rows again.
    """
    if hint is None:
        out, _ = kernels.drop_rows(feasible, rows, (), (), 0, -1, -1)
        return out, None
    out, tied = kernels.drop_rows(feasible, rows, hint.arrays, hint.weights, hint.best, hint.first, hint.last)
    if out is None:
        return None, hint
    if not 0 <= tied < hint.ties:
        return out, None
    # The constructor, not ``dataclasses.replace``: this runs on every cycle with nominations.
    return out, BestRows(hint.arrays, hint.weights, out, hint.best, hint.ties - tied, hint.first, hint.last)
