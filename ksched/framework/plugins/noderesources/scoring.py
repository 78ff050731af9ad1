"""Numpy references of the resource kernels: NodeResourcesFit's filter bits, its three scoring
strategies and BalancedAllocation, each over every row of the node table at once.

These read like upstream (``noderesources/fit.go``, ``resource_allocation.go``,
``least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go``,
``helper/shape_score.go``, ``balanced_allocation.go``) and are what the compiled twins in
``ksched/_fast/kernels.pyx`` must equal exactly; the argument conventions (column specs, ``src``
codes, bit layout) are documented in ``ksched/_fast/kernels.pxd``, and the codes themselves come
from ``ksched.framework.kernels``, which checks them against the compiled module's.

Upstream computes in Go ``int64``: products and sums wrap around and division truncates toward
zero. Numpy integer *arrays* wrap the same way (and never warn), so every integer expression here
stays an array expression; :func:`tdiv` supplies Go's truncating division, since ``//`` floors.
Floating-point expressions are written in upstream's operation order so that numpy and C round
identically (no ``np.std``, no reassociation).
"""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np

from ksched.framework.kernels import (
    LEAST_ALLOCATED,
    MAX_NODE_SCORE,
    MAX_UTILIZATION,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    SPEC_BALANCED,
    SPEC_FILTER,
    SPEC_FIT,
    SPEC_HEADER,
    SRC_REQUESTED,
    FusedPass,
)

STRATEGY_CODES: Final = {
    "LeastAllocated": LEAST_ALLOCATED,
    "MostAllocated": MOST_ALLOCATED,
    "RequestedToCapacityRatio": REQUESTED_TO_CAPACITY_RATIO,
}
"""NodeResourcesFit's ``scoringStrategy.type`` names and the kernels' codes for them."""


def tdiv(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Go's ``a / b`` for int64 arrays with ``b > 0``: the quotient truncated toward zero."""
    q = np.floor_divide(a, b)
    q += (a < 0) & (np.remainder(a, b) != 0)
    return q


def _column(arr: np.ndarray, col: int) -> np.ndarray:
    """``arr[:, col]`` as int64, or zeros for col -1 (a resource no node has)."""
    if col < 0:
        return np.zeros(arr.shape[0], dtype=np.int64)
    return arr[:, col]


# --------------------------------------------------------------------------- filter
def fit_filter_ref(
    alloc: np.ndarray,
    req: np.ndarray,
    allowed: np.ndarray,
    count: np.ndarray,
    cols: np.ndarray,
    pod: np.ndarray,
) -> np.ndarray:
    """Upstream ``fitsRequest`` as per-row bits: bit 0 "Too many pods", then per checked resource
    ``j`` bit ``1+2j`` (request > allocatable − requested) or bit ``2+2j`` when the request exceeds
    even the whole allocatable (upstream marks that reason UnschedulableAndUnresolvable)."""
    n = alloc.shape[0]
    bits = (count[:n] + 1 > allowed[:n]).astype(np.uint64)
    for j in range(cols.shape[0]):
        a = _column(alloc, int(cols[j]))
        free = a - _column(req, int(cols[j]))
        p = np.int64(pod[j])
        short = p > free
        unresolvable = (p > a).astype(np.uint64)
        bits |= short.astype(np.uint64) << (np.uint64(1 + 2 * j) + unresolvable)
    return bits


# --------------------------------------------------------------------------- scores
def broken_line_ref(x: np.ndarray, shape_u: np.ndarray, shape_s: np.ndarray) -> np.ndarray:
    """Upstream ``helper.BuildBrokenLinearFunction`` applied elementwise (integer interpolation)."""
    out = np.full(x.shape, shape_s[-1], dtype=np.int64)
    done = np.zeros(x.shape, dtype=np.bool_)
    for t in range(shape_u.shape[0]):
        hit = ~done & (x <= shape_u[t])
        if t == 0:
            out[hit] = shape_s[0]
        else:
            num = (shape_s[t] - shape_s[t - 1]) * (x[hit] - shape_u[t - 1])
            out[hit] = shape_s[t - 1] + tdiv(num, int(shape_u[t] - shape_u[t - 1]))
        done |= hit
    return out


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Go's ``math.Round`` (halves away from zero; ``np.round`` rounds halves to even), as int64."""
    t = np.trunc(x)
    frac = x - t  # exact for doubles
    t += np.where(frac >= 0.5, 1.0, 0.0) - np.where(frac <= -0.5, 1.0, 0.0)
    with np.errstate(invalid="ignore"):
        return t.astype(np.int64)


def resource_score_ref(
    alloc: np.ndarray,
    req: np.ndarray,
    nz: np.ndarray,
    cols: np.ndarray,
    src: np.ndarray,
    pod: np.ndarray,
    w: np.ndarray,
    strategy: int,
    shape_u: np.ndarray,
    shape_s: np.ndarray,
) -> tuple[np.ndarray, bool]:
    """``resourceAllocationScorer.score`` with the configured strategy, for every row.

    Resources with allocatable 0 drop out of numerator and weights (upstream skips them); with
    RequestedToCapacityRatio so do resources scoring 0 (upstream's ``resourceScore > 0`` quirk).
    Returns the scores and whether all of them lie in 0..100 (they do unless int64 wrapped).
    """
    n = alloc.shape[0]
    node_score = np.zeros(n, dtype=np.int64)
    weight_sum = np.zeros(n, dtype=np.int64)
    for j in range(cols.shape[0]):
        col = int(cols[j])
        a = _column(alloc, col)
        base = _column(req, col) if src[j] == SRC_REQUESTED else nz[:n, int(src[j]) - 1]
        r = base + np.int64(pod[j])
        present = a != 0
        safe_a = np.where(present, a, 1)
        over = r > a
        if strategy == LEAST_ALLOCATED:
            s = np.where(over, 0, tdiv((a - r) * MAX_NODE_SCORE, safe_a))
            used = present
        elif strategy == MOST_ALLOCATED:
            s = tdiv(np.where(over, a, r) * MAX_NODE_SCORE, safe_a)
            used = present
        else:
            util = np.where(over, MAX_UTILIZATION, tdiv(r * MAX_UTILIZATION, safe_a))
            s = broken_line_ref(util, shape_u, shape_s)
            used = present & (s > 0)
        weight = np.int64(w[j])
        node_score += np.where(used, s * weight, 0)
        weight_sum += np.where(used, weight, 0)
    has = weight_sum != 0
    safe_ws = np.where(has, weight_sum, 1)
    if strategy == REQUESTED_TO_CAPACITY_RATIO:
        scores = np.where(has, round_half_away(node_score.astype(np.float64) / safe_ws.astype(np.float64)), 0)
    else:
        scores = np.where(has, tdiv(node_score, safe_ws), 0)
    in_range = bool(np.all((scores >= 0) & (scores <= MAX_NODE_SCORE)))
    return scores.astype(np.int64, copy=False), in_range


def balanced_score_ref(
    alloc: np.ndarray, req: np.ndarray, cols: np.ndarray, pod: np.ndarray
) -> tuple[np.ndarray, bool]:
    """Upstream ``balancedResourceScorer`` for every row: ``int64((1 − std) × 100)`` over the
    capped fractions ``requested/allocatable`` of the resources with allocatable > 0.

    Two fractions: ``|f0 − f1| / 2``; more: population std, summed in resource order exactly as
    upstream (and the C kernel) does, so results are bit-identical.
    """
    n = alloc.shape[0]
    fractions: list[np.ndarray] = []
    presents: list[np.ndarray] = []
    cnt = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    f0 = np.zeros(n, dtype=np.float64)
    f1 = np.zeros(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(cols.shape[0]):
            a = _column(alloc, int(cols[j]))
            present = a != 0
            r = _column(req, int(cols[j])) + np.int64(pod[j])
            f = r.astype(np.float64) / np.where(present, a, 1).astype(np.float64)
            f = np.where(f > 1.0, 1.0, f)
            total = np.where(present, total + f, total)
            f0 = np.where(present & (cnt == 0), f, f0)
            f1 = np.where(present & (cnt == 1), f, f1)
            cnt += present
            fractions.append(f)
            presents.append(present)
        std = np.zeros(n, dtype=np.float64)
        two = cnt == 2
        std[two] = np.abs((f0[two] - f1[two]) / 2.0)
        many = cnt > 2
        if many.any():
            cnt_f = cnt.astype(np.float64)
            mean = total / np.where(many, cnt_f, 1.0)
            acc = np.zeros(n, dtype=np.float64)
            for f, present in zip(fractions, presents, strict=True):
                acc = np.where(present, acc + (f - mean) * (f - mean), acc)
            std = np.where(many, np.sqrt(acc / np.where(many, cnt_f, 1.0)), std)
        scores = ((1.0 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    in_range = bool(np.all((scores >= 0) & (scores <= MAX_NODE_SCORE)))
    return scores, in_range


class UnpackedSpec(NamedTuple):
    """The parts of a packed spec (layout in ``ksched/_fast/kernels.pxd``)."""

    do_filter: bool
    fcols: np.ndarray
    fpod: np.ndarray
    do_fit: bool
    scols: np.ndarray
    ssrc: np.ndarray
    spod: np.ndarray
    sw: np.ndarray
    strategy: int
    shape_u: np.ndarray
    shape_s: np.ndarray
    do_bal: bool
    bcols: np.ndarray
    bpod: np.ndarray


def pack_spec(
    do_filter: bool,
    fcols: np.ndarray,
    fpod: np.ndarray,
    do_fit: bool,
    scols: np.ndarray,
    ssrc: np.ndarray,
    spod: np.ndarray,
    sw: np.ndarray,
    strategy: int,
    shape_u: np.ndarray,
    shape_s: np.ndarray,
    do_bal: bool,
    bcols: np.ndarray,
    bpod: np.ndarray,
) -> np.ndarray:
    """One read-only int64 array holding everything the fused pass needs to know about the pod.

    Packed because each array argument of a compiled call costs a buffer acquisition; the pod
    spec is built once per request shape and cached, so packing costs nothing per cycle.
    """
    flags = (SPEC_FILTER if do_filter else 0) | (SPEC_FIT if do_fit else 0) | (SPEC_BALANCED if do_bal else 0)
    header = [flags, strategy, len(fcols), len(scols), len(bcols), len(shape_u), 0, 0]
    parts = [fcols, fpod, scols, ssrc, spod, sw, bcols, bpod, shape_u, shape_s]
    out = np.concatenate([np.asarray(v, dtype=np.int64) for v in (header, *parts)])
    out.flags.writeable = False
    return out


def unpack_spec(spec: np.ndarray) -> UnpackedSpec:
    """The inverse of :func:`pack_spec`."""
    flags, strategy, kf, ks, kb, m = (int(v) for v in spec[:6])
    at = SPEC_HEADER
    parts: list[np.ndarray] = []
    for size in (kf, kf, ks, ks, ks, ks, kb, kb, m, m):
        parts.append(spec[at : at + size])
        at += size
    if at != spec.shape[0]:
        raise ValueError(f"spec of length {spec.shape[0]} does not match its header")
    fcols, fpod, scols, ssrc, spod, sw, bcols, bpod, shape_u, shape_s = parts
    return UnpackedSpec(
        bool(flags & SPEC_FILTER), fcols, fpod,
        bool(flags & SPEC_FIT), scols, ssrc, spod, sw, strategy, shape_u, shape_s,
        bool(flags & SPEC_BALANCED), bcols, bpod,
    )  # fmt: skip


def fused_pass_ref(
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
) -> FusedPass:
    """The references above over rows ``[0, n)`` with the compiled ``fused_pass``'s signature (the
    node table's whole arrays and the pod's packed spec, :func:`pack_spec`), and what it adds: the
    rows that are valid and fail no Fit check, and where the maximum of ``wf * fit + wb * balanced``
    (int64, wrapping; a part left out of the spec counts 0) lies among them."""
    s = unpack_spec(spec)
    alloc, req, nz, allowed, count = alloc[:n], req[:n], nz[:n], allowed[:n], count[:n]
    bits = fit_filter_ref(alloc, req, allowed, count, s.fcols, s.fpod) if s.do_filter else None
    fit, fit_ok = (
        resource_score_ref(alloc, req, nz, s.scols, s.ssrc, s.spod, s.sw, s.strategy, s.shape_u, s.shape_s)
        if s.do_fit
        else (None, True)
    )
    bal, bal_ok = balanced_score_ref(alloc, req, s.bcols, s.bpod) if s.do_bal else (None, True)
    n_fail = int(np.count_nonzero(bits)) if bits is not None else 0
    passed = valid[:n].copy()
    if bits is not None:
        passed &= bits == 0
    total = np.zeros(n, dtype=np.int64)
    if fit is not None:
        total += fit * np.int64(wf)
    if bal is not None:
        total += bal * np.int64(wb)
    rows = np.flatnonzero(passed)
    if rows.size == 0:
        return FusedPass(bits, fit, fit_ok, bal, bal_ok, n_fail, passed, 0, 0, 0, -1, -1)
    best = total[rows].max()
    ties = rows[total[rows] == best]
    return FusedPass(
        bits, fit, fit_ok, bal, bal_ok, n_fail,
        passed, int(rows.size), int(best), int(ties.size), int(ties[0]), int(ties[-1]),
    )  # fmt: skip
