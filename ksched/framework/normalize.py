"""Score normalization shared by score plugins (upstream ``plugins/helper/normalize_score.go``).

Upstream's ``DefaultNormalizeScore`` scales the raw scores of the nodes being scored so that the
largest becomes ``MaxNodeScore`` (integer arithmetic, truncating), optionally reversed. Here the
"nodes being scored" are the ``feasible`` rows: rows outside that mask may hold garbage and must not
influence the maximum, and what this returns at those rows is unspecified.
"""

from __future__ import annotations

import numpy as np

from ksched.framework.interface import MAX_NODE_SCORE, Scores


def _trunc_div(num: np.ndarray, den: int) -> np.ndarray:
    """Integer division rounding toward zero, like Go's ``/`` on int64 (``den > 0``)."""
    q = np.abs(num) // den
    return np.where(num < 0, -q, q)


def default_normalize_score(scores: Scores, feasible: np.ndarray, reverse: bool) -> Scores:
    """Upstream ``DefaultNormalizeScore(MaxNodeScore, reverse, scores)`` over the feasible rows.

    - ``max`` is the largest feasible raw score, floored at 0 (upstream starts its running max at 0).
    - ``max == 0``: with ``reverse`` every node gets ``MaxNodeScore`` (returned as a plain int);
      without it the scores are returned unchanged.
    - Otherwise ``MaxNodeScore * s / max`` (truncating), then ``MaxNodeScore - that`` if ``reverse``.

    A plain-int input means every node scored the same and yields a plain int.
    """
    if not isinstance(scores, np.ndarray):
        value = int(scores)
        if value <= 0:
            return MAX_NODE_SCORE if reverse else value
        return 0 if reverse else MAX_NODE_SCORE
    n = feasible.shape[0]
    raw = scores[:n]
    max_count = int(np.max(raw, where=feasible, initial=0))
    if max_count == 0:
        return MAX_NODE_SCORE if reverse else scores
    out = _trunc_div(raw.astype(np.int64, copy=False) * MAX_NODE_SCORE, max_count)
    if reverse:
        out = MAX_NODE_SCORE - out
    return out
