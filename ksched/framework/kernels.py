"""The one door to the compiled kernels in :mod:`ksched._fast`, with numpy fallbacks.

Every function here has a numpy reference (``*_ref``) that reads like the upstream description and
a compiled twin; the property tests assert they agree exactly. When the extension is missing (a
source checkout that was never built) the numpy path is used and one warning is logged.

The Python side owns validation and dtypes: arrays handed to a kernel are C-contiguous along the
last axis and of the exact dtype named in ``ksched/_fast/_types.pxd``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

import numpy as np

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., object])

_fast: ModuleType | None = None
_tried = False


def compiled() -> ModuleType | None:
    """The compiled kernel module, or None (logged once) when it is not built."""
    global _fast, _tried
    if not _tried:
        _tried = True
        try:
            from ksched import _fast as fast_pkg  # noqa: F401
            from ksched._fast import kernels as fast
        except ImportError as exc:
            log.warning("compiled kernels unavailable (%s); using the slower numpy path", exc)
            fast = None
        _fast = fast
    return _fast


def use_compiled(enabled: bool) -> None:
    """Force the numpy path (``False``) or re-enable compiled kernels; for tests and benchmarks."""
    global _fast, _tried
    if enabled:
        _tried = False
        _fast = None
        compiled()
    else:
        _tried = True
        _fast = None


def dispatch(name: str, reference: F) -> F:
    """The compiled kernel ``name`` when the extension is built (and enabled), else ``reference``.

    Plugins keep their numpy references and ask here on every call, so :func:`use_compiled`
    switches paths immediately and no plugin module imports :mod:`ksched._fast`. The compiled
    kernel takes the same arguments as the reference; callers pass C-contiguous arrays of the
    exact dtypes named in ``ksched/_fast/_types.pxd``.
    """
    fast = _fast if _tried else compiled()
    if fast is None:
        return reference
    fn = getattr(fast, name, None)
    return reference if fn is None else fn  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- selection
def select_best_ref(total: np.ndarray, feasible: np.ndarray, u: float) -> int:
    """Row of the highest ``total`` among ``feasible`` rows; ties broken by ``u`` in [0, 1).

    Among the tying rows in row order, the one at index ``floor(u * count)`` wins, so every tying
    node is equally likely (upstream picks uniformly at random among the best). -1 if none.
    """
    rows = np.flatnonzero(feasible)
    if rows.size == 0:
        return -1
    vals = total[rows]
    best = vals.max()
    ties = rows[vals == best]
    return int(ties[min(int(u * ties.size), ties.size - 1)])


def select_best(total: np.ndarray, feasible: np.ndarray, u: float) -> int:
    """:func:`select_best_ref`, compiled when available (one pass for the maximum, one to pick)."""
    fast = _fast if _tried else compiled()
    if fast is not None:
        if total.dtype != np.int64 or not total.flags.c_contiguous:
            total = np.ascontiguousarray(total, dtype=np.int64)
        if not feasible.flags.c_contiguous:
            feasible = np.ascontiguousarray(feasible)
        return int(fast.select_best(total, feasible.view(np.uint8), u))
    return select_best_ref(total, feasible, u)


def nth_true_ref(mask: np.ndarray, u: float) -> int:
    """Row of the ``floor(u * count)``-th True in ``mask`` (all rows tie); -1 if none."""
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return -1
    return int(rows[min(int(u * rows.size), rows.size - 1)])


# --------------------------------------------------------------------------- the runtime's passes
def drop_failed_ref(feasible: np.ndarray, failed: np.ndarray, n: int) -> int:
    """``feasible[:n] &= failed[:n] == 0`` in place; the number of rows left feasible."""
    view = feasible[:n]
    view &= failed[:n] == 0
    return int(np.count_nonzero(view))


def drop_failed(feasible: np.ndarray, failed: np.ndarray, n: int) -> int:
    """:func:`drop_failed_ref`, compiled when available (one pass, no temporaries)."""
    fast = _fast if _tried else compiled()
    if (
        fast is not None
        and failed.dtype == np.uint64
        and failed.flags.c_contiguous
        and feasible.flags.c_contiguous
        and feasible.flags.writeable
    ):
        return int(fast.drop_failed(feasible, failed, n))
    return drop_failed_ref(feasible, failed, n)


def nth_best_row_ref(
    arrays: tuple[np.ndarray, ...],
    weights: tuple[int, ...],
    passed: np.ndarray,
    best: int,
    k: int,
    start: int,
) -> int:
    """Row of the ``k``-th (from 0) ``passed`` row at or after ``start`` whose ``sum(w * a[row])``
    (int64, wrapping) equals ``best``; -1 if there is none."""
    n = passed.shape[0]
    total = np.zeros(n, dtype=np.int64)
    for a, w in zip(arrays, weights, strict=True):
        total += a[:n] * np.int64(w)
    hits = np.flatnonzero(passed & (total == best))
    hits = hits[hits >= start]
    return int(hits[k]) if k < hits.size else -1


def nth_best_row(
    arrays: tuple[np.ndarray, ...],
    weights: tuple[int, ...],
    passed: np.ndarray,
    best: int,
    k: int,
    start: int,
) -> int:
    """:func:`nth_best_row_ref`, compiled for one or two int64 arrays when available."""
    fast = _fast if _tried else compiled()
    if fast is not None and 1 <= len(arrays) <= 2 and passed.dtype == np.bool_ and passed.flags.c_contiguous:
        fit, wf = arrays[0], weights[0]
        bal, wb = (arrays[1], weights[1]) if len(arrays) == 2 else (None, 0)
        return int(fast.nth_best_row(fit, wf, bal, wb, passed, best, k, start))
    return nth_best_row_ref(arrays, weights, passed, best, k, start)
