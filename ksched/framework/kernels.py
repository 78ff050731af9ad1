"""The one door to the compiled kernels in :mod:`ksched._fast`, with numpy fallbacks.

Every function here has a numpy reference (``*_ref``) that reads like the upstream description and
a compiled twin; the property tests assert they agree exactly. When the extension is missing (a
source checkout that was never built) the numpy path is used and one warning is logged.

The Python side owns validation and dtypes: arrays handed to a kernel are C-contiguous along the
last axis and of the exact dtype named in ``ksched/_fast/_types.pxd``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from types import ModuleType
from typing import Final, NamedTuple, TypeVar

import numpy as np

from ksched.errors import BuildError

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., object])

# --------------------------------------------------------------------------- the contract's codes
# The codes the resource kernels and the Python side share (meanings in ksched/_fast/kernels.pxd).
# The compiled module has them as C enums from that .pxd; these are the Python side's, and the
# numpy references and the plugins take them from here. compiled() compares the two sets when it
# loads the module and raises BuildError when they differ, so a stale build cannot misread a spec.
LEAST_ALLOCATED: Final = 0
MOST_ALLOCATED: Final = 1
REQUESTED_TO_CAPACITY_RATIO: Final = 2
SRC_REQUESTED: Final = 0
SRC_NONZERO_CPU: Final = 1
SRC_NONZERO_MEMORY: Final = 2
MAX_FILTER_RESOURCES: Final = 31
"""Bit 0 is "Too many pods"; each checked resource takes two more bits of the uint64."""
SPEC_HEADER: Final = 8
SPEC_FILTER: Final = 1
SPEC_FIT: Final = 2
SPEC_BALANCED: Final = 4
MAX_NODE_SCORE: Final = 100
MAX_UTILIZATION: Final = 100
CONTRACT: Final[dict[str, int]] = {
    "LEAST_ALLOCATED": LEAST_ALLOCATED,
    "MOST_ALLOCATED": MOST_ALLOCATED,
    "REQUESTED_TO_CAPACITY_RATIO": REQUESTED_TO_CAPACITY_RATIO,
    "SRC_REQUESTED": SRC_REQUESTED,
    "SRC_NONZERO_CPU": SRC_NONZERO_CPU,
    "SRC_NONZERO_MEMORY": SRC_NONZERO_MEMORY,
    "MAX_FILTER_RESOURCES": MAX_FILTER_RESOURCES,
    "SPEC_HEADER": SPEC_HEADER,
    "SPEC_FILTER": SPEC_FILTER,
    "SPEC_FIT": SPEC_FIT,
    "SPEC_BALANCED": SPEC_BALANCED,
    "MAX_NODE_SCORE": MAX_NODE_SCORE,
    "MAX_UTILIZATION": MAX_UTILIZATION,
}


def check_contract(fast: ModuleType) -> None:
    """Raise :class:`BuildError` unless ``fast.constants()`` (the compiled module's codes) equals
    :data:`CONTRACT`."""
    built: dict[str, int] = dict(fast.constants())
    if built != CONTRACT:
        differ = {
            name: (CONTRACT.get(name), built.get(name))
            for name in sorted(CONTRACT.keys() | built.keys())
            if CONTRACT.get(name) != built.get(name)
        }
        where = getattr(fast, "__file__", fast.__name__)
        raise BuildError(
            f"{where} was built with kernel codes that differ from ksched.framework.kernels "
            f"(name: (python, compiled)): {differ}; rebuild it with `python setup.py build_ext --inplace`"
        )


_fast: ModuleType | None = None
_tried = False


def compiled() -> ModuleType | None:
    """The compiled kernel module, or None (logged once) when it is not built.

    Raises :class:`BuildError`, on every call, when the module is built but its codes differ from
    :data:`CONTRACT` (:func:`check_contract`).
    """
    global _fast, _tried
    if not _tried:
        try:
            from ksched import _fast as fast_pkg  # noqa: F401
            from ksched._fast import kernels as fast
        except ImportError as exc:
            log.warning("compiled kernels unavailable (%s); using the slower numpy path", exc)
            fast = None
        if fast is not None:
            check_contract(fast)
        _tried = True
        _fast = fast
    return _fast


_extra_modules: dict[str, ModuleType | None] = {}


def extra_module(name: str) -> ModuleType | None:
    """``ksched._fast.<name>``, a kernel module besides ``kernels`` (one per plugin family), when
    compiled kernels are on and that module is built; a failed import is logged once and the
    caller uses its numpy reference."""
    if (_fast if _tried else compiled()) is None:
        return None
    if name not in _extra_modules:
        try:
            mod: ModuleType | None = importlib.import_module(f"ksched._fast.{name}")
        except ImportError as exc:
            log.warning("compiled %s kernels unavailable (%s); using numpy", name, exc)
            mod = None
        _extra_modules[name] = mod
    return _extra_modules[name]


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


# --------------------------------------------------------------------------- the fused resource sweep
class FusedPass(NamedTuple):
    """What the fused resource sweep computes over rows ``[0, n)`` of the node table.

    The compiled ``fused_pass`` (``ksched/_fast/kernels.pyx``) and its numpy reference
    (``noderesources.scoring.fused_pass_ref``) both produce it, through :func:`fused_pass`. A part
    the pod's spec leaves out (``kernels.pxd``: ``SPEC_FILTER``, ``SPEC_FIT``, ``SPEC_BALANCED``)
    is None, and counts 0 in the weighted sum below.
    """

    bits: np.ndarray | None
    """NodeResourcesFit's failure bits per row (uint64, layout in ``kernels.pxd``)."""
    fit: np.ndarray | None
    """NodeResourcesFit's score per row (int64)."""
    fit_in_range: bool
    """Every Fit score lies in 0..100 (they do unless Go's int64 arithmetic wrapped)."""
    balanced: np.ndarray | None
    """NodeResourcesBalancedAllocation's score per row (int64)."""
    balanced_in_range: bool
    failing_rows: int
    """Rows with any failure bit (0 without the filter part), so Filter needs no ``bits.any()``."""
    passed: np.ndarray
    """Bool per row: valid and no failure bit (``FilterResult.passed``)."""
    n_passed: int
    best: int
    """Maximum of ``wf * fit + wb * balanced`` (Go int64, wrapping) over the passing rows; 0 if none."""
    ties: int
    """Passing rows that reach ``best`` (0 if none passes)."""
    first: int
    """Lowest of those rows (-1 if none)."""
    last: int
    """Highest of those rows (-1 if none)."""


def fused_pass(
    alloc: np.ndarray,
    req: np.ndarray,
    nz: np.ndarray,
    allowed: np.ndarray,
    count: np.ndarray,
    valid: np.ndarray,
    n: int,
    spec: np.ndarray,
    wf: int,
    wb: int,
    *,
    reference: Callable[..., FusedPass],
) -> FusedPass:
    """The fused sweep (Fit bits and score, BalancedAllocation score, pass mask, best rows) of rows
    ``[0, n)``: compiled when available, else ``reference`` (the plugin's numpy twin, same arguments).

    ``alloc``, ``req``, ``nz``, ``allowed``, ``count`` and ``valid`` are the node table's whole
    arrays (only rows below ``n`` are read); ``spec`` is the pod's packed spec (``kernels.pxd``).
    """
    fast = _fast if _tried else compiled()
    if fast is None:
        return reference(alloc, req, nz, allowed, count, valid, n, spec, wf, wb)
    return FusedPass._make(fast.fused_pass(alloc, req, nz, allowed, count, valid, n, spec, wf, wb))


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


def drop_rows_ref(
    feasible: np.ndarray,
    rows: np.ndarray,
    arrays: tuple[np.ndarray, ...],
    weights: tuple[int, ...],
    best: int,
    first: int,
    last: int,
) -> tuple[np.ndarray | None, int]:
    """``(out, tied)``: ``out`` is a copy of ``feasible`` with ``rows`` cleared (None when none of
    them was feasible; ``tied`` is then 0); ``tied`` is how many of the dropped rows score ``best``
    in ``sum(w * a[row])`` (int64, wrapping), or -1 when ``first`` or ``last`` is among those (no
    arrays: 0). What the nominated-pods pass does to the cycle's feasible rows and best-row hint."""
    n = feasible.shape[0]
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= n):
        raise IndexError(f"a row outside the {n} rows of feasible")
    lost = rows[feasible[rows]]
    if lost.size == 0:
        return None, 0
    out = feasible.copy()
    out[lost] = False
    if not arrays:
        return out, 0
    score = np.zeros(lost.size, dtype=np.int64)
    for a, w in zip(arrays, weights, strict=True):
        score += a[lost] * np.int64(w)
    tied = lost[score == best]
    if tied.size and (first in tied or last in tied):
        return out, -1
    return out, int(tied.size)


def drop_rows(
    feasible: np.ndarray,
    rows: np.ndarray,
    arrays: tuple[np.ndarray, ...],
    weights: tuple[int, ...],
    best: int,
    first: int,
    last: int,
) -> tuple[np.ndarray | None, int]:
    """:func:`drop_rows_ref`, compiled for none, one or two int64 arrays when available."""
    fast = _fast if _tried else compiled()
    if fast is not None and len(arrays) <= 2 and rows.dtype == np.intp and rows.flags.c_contiguous:
        fit, wf = (arrays[0], weights[0]) if arrays else (None, 0)
        bal, wb = (arrays[1], weights[1]) if len(arrays) == 2 else (None, 0)
        out, tied = fast.drop_rows(feasible, rows, fit, wf, bal, wb, best, first, last)
        return out, int(tied)
    return drop_rows_ref(feasible, rows, arrays, weights, best, first, last)


# --------------------------------------------------------------------------- PodTopologySpread
# Kernels of ksched/_fast/spread.pyx (a module of its own); the numpy references below are the contract.
SPREAD_MAX_INT32 = 2**31 - 1


def _spread_kernel(name: str, reference: F) -> F:
    """``ksched._fast.spread.<name>`` when compiled kernels are on and that module is built."""
    mod = extra_module("spread")
    fn = getattr(mod, name, None) if mod is not None else None
    return reference if fn is None else fn  # type: ignore[no-any-return]


def spread_domain_sums_ref(
    col: np.ndarray, rows: np.ndarray, counts: np.ndarray, n_values: int
) -> tuple[np.ndarray, int, int]:
    """Matching pods per topology domain over ``rows``: ``(sums, domains, low)``.

    ``col`` (int32) holds interned label-value ids below ``n_values`` (-1: label absent), ``rows`` is
    a bool (or uint8) row mask, ``counts`` the int64 matching pods per row. ``sums`` has
    ``n_values + 1`` int64 cells, the last always 0 (so ``sums[col]`` reads 0 where the label is
    absent); ``domains`` is how many values occur on ``rows`` and ``low`` the smallest of their sums
    (``2**31 - 1`` when none occurs, upstream's MaxInt32).
    """
    sel = rows.astype(np.bool_, copy=False) & (col >= 0)
    dom = col[sel]
    sums = np.bincount(dom, weights=counts[sel], minlength=n_values + 1).astype(np.int64)
    seen = np.bincount(dom, minlength=n_values + 1) > 0
    domains = int(np.count_nonzero(seen))
    low = int(sums[seen].min()) if domains else SPREAD_MAX_INT32
    return sums, domains, low


def spread_domain_sums(
    col: np.ndarray, rows: np.ndarray, counts: np.ndarray, n_values: int
) -> tuple[np.ndarray, int, int]:
    fn = _spread_kernel("domain_sums", spread_domain_sums_ref)
    if fn is spread_domain_sums_ref:
        return fn(col, rows, counts, n_values)
    return fn(col, rows.view(np.uint8), counts, n_values)  # type: ignore[no-any-return]


def spread_filter_pass_ref(
    col: np.ndarray, sums: np.ndarray, offset: int, max_skew: int, undecided: np.ndarray, bits: np.ndarray
) -> None:
    """One constraint's verdict for the still-undecided rows, in place.

    Where ``undecided`` (uint8): a missing label (``col < 0``) sets bit 0 of ``bits`` (uint64), else
    ``sums[col] + offset > max_skew`` sets bit 1; a row so rejected is no longer undecided.
    """
    open_ = undecided.astype(np.bool_)
    missing = open_ & (col < 0)
    too_much = open_ & ~missing & (sums[col] + offset > max_skew)
    bits |= missing.astype(np.uint64) | (too_much.astype(np.uint64) << np.uint64(1))
    undecided[missing | too_much] = 0


def spread_filter_pass(
    col: np.ndarray, sums: np.ndarray, offset: int, max_skew: int, undecided: np.ndarray, bits: np.ndarray
) -> None:
    _spread_kernel("filter_pass", spread_filter_pass_ref)(col, sums, offset, max_skew, undecided, bits)


def spread_score_pass_ref(
    col: np.ndarray, values: np.ndarray, by_row: bool, weight: float, addend: float, total: np.ndarray
) -> None:
    """``total[r] += cnt * weight + addend`` (float64, in that order) where ``col[r] >= 0``; ``cnt``
    is ``values[r]`` when ``by_row``, else ``values[col[r]]`` (per-domain sums)."""
    has = col >= 0
    cnt = values[: col.shape[0]] if by_row else values[col]
    total[has] += cnt[has].astype(np.float64) * weight + addend


def spread_score_pass(
    col: np.ndarray, values: np.ndarray, by_row: bool, weight: float, addend: float, total: np.ndarray
) -> None:
    _spread_kernel("score_pass", spread_score_pass_ref)(col, values, by_row, weight, addend, total)


def spread_round_ref(total: np.ndarray) -> np.ndarray:
    """Go's ``math.Round`` of non-negative float64 scores (half away from zero), as int64."""
    whole = np.trunc(total)
    return (whole + (total - whole >= 0.5)).astype(np.int64)


def spread_round(total: np.ndarray) -> np.ndarray:
    return _spread_kernel("round_scores", spread_round_ref)(total)


def spread_normalize_ref(raw: np.ndarray, feasible: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """Upstream PodTopologySpread ``NormalizeScore`` over the feasible rows (int64 out, 0 elsewhere).

    Among feasible, not ignored rows: ``max`` (at least 0) and ``min`` of ``raw``; every such row gets
    100 when ``max == 0``, else ``100 * (max + min - raw) // max``. Ignored rows get 0.
    """
    n = feasible.shape[0]
    scored = feasible.astype(np.bool_, copy=False) & ~ignored[:n].astype(np.bool_, copy=False)
    out = np.zeros(n, dtype=np.int64)
    if not scored.any():
        return out
    values = raw[:n][scored]
    high = max(int(values.max()), 0)
    low = int(values.min())
    out[scored] = 100 if high == 0 else 100 * (high + low - values) // high
    return out


def spread_normalize(raw: np.ndarray, feasible: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    fn = _spread_kernel("normalize", spread_normalize_ref)
    if fn is spread_normalize_ref:
        return fn(raw, feasible, ignored)
    return fn(raw, feasible.view(np.uint8), ignored.view(np.uint8))  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- InterPodAffinity
def affinity_domain_totals_ref(col: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row, the total of ``weights`` over all rows of the same topology domain (int64).

    ``col`` holds interned label-value ids (int32, -1: the node lacks the key) and ``weights`` one
    int64 per row; ``out[r] = sum(weights[s] for s if col[s] == col[r])`` where ``col[r] >= 0``,
    else 0. The bincount sums in float64, exact while totals stay below 2**53.
    """
    n = col.shape[0]
    out = np.zeros(n, dtype=np.int64)
    keyed = col >= 0
    if not keyed.any():
        return out
    ids = col[keyed]
    sums = np.bincount(ids, weights=weights[:n][keyed])
    out[keyed] = sums[ids]
    return out


def affinity_domain_totals(col: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """:func:`affinity_domain_totals_ref`, compiled when available (two passes, one scratch array)."""
    fast = extra_module("affinity")
    if fast is not None:
        n = col.shape[0]
        if col.dtype != np.int32 or not col.flags.c_contiguous:
            col = np.ascontiguousarray(col, dtype=np.int32)
        w = weights[:n]
        if w.dtype != np.int64 or not w.flags.c_contiguous:
            w = np.ascontiguousarray(w, dtype=np.int64)
        return fast.domain_totals(col, w)  # type: ignore[no-any-return]
    return affinity_domain_totals_ref(col, weights)
