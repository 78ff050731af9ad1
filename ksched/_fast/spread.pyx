"""PodTopologySpread's per-domain counting and skew check, compiled.

``domain_sums(col, rows, counts, n_values)``: matching pods per topology domain over the rows in
``rows`` (label present), with how many domains occur and their minimum, in one pass.
``filter_pass(col, sums, offset, max_skew, undecided, bits)``: one constraint's verdict for every
still-undecided row (bit 0: label missing, bit 1: skew too large), in one pass.

The numpy references they must agree with exactly are ``spread_domain_sums_ref`` and
``spread_filter_pass_ref`` in ``ksched.framework.kernels``; ``tests/property/test_podtopologyspread_props.py``
compares them.
"""

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t

from ksched._fast._types cimport NOGIL_ROWS, i64, u64, u8

cnp.import_array()

# numpy.int32 label-value id columns (ksched.cache.node_table).
ctypedef int32_t i32

cdef i64 MAX_INT32 = 2147483647


cdef void _domain_sums(
    const i32[::1] col, const u8[::1] rows, const i64[::1] counts, i64[::1] sums, u8[::1] seen
) noexcept nogil:
    cdef Py_ssize_t n = col.shape[0], r
    cdef i32 v
    for r in range(n):
        v = col[r]
        if v >= 0 and rows[r]:
            sums[v] += counts[r]
            seen[v] = 1


def domain_sums(const i32[::1] col, const u8[::1] rows, const i64[::1] counts, Py_ssize_t n_values):
    """``(sums, domains, low)``: ``sums`` int64 of ``n_values + 1`` cells (the last stays 0), the
    number of domains seen on ``rows`` and the smallest of their sums (2**31 - 1 when none).

    Every ``col`` value must be below ``n_values``; ``rows`` and ``counts`` cover ``len(col)`` rows.
    """
    cdef Py_ssize_t n = col.shape[0]
    if rows.shape[0] < n or counts.shape[0] < n:
        raise ValueError(f"rows/counts cover {rows.shape[0]}/{counts.shape[0]} rows, need {n}")
    sums_arr = np.zeros(n_values + 1, dtype=np.int64)
    seen_arr = np.zeros(n_values + 1, dtype=np.uint8)
    cdef i64[::1] sums = sums_arr
    cdef u8[::1] seen = seen_arr
    cdef Py_ssize_t domains
    cdef i64 low = MAX_INT32
    if n < NOGIL_ROWS:
        domains = _domains(col, rows, counts, sums, seen, n_values, &low)
    else:
        with nogil:
            domains = _domains(col, rows, counts, sums, seen, n_values, &low)
    return sums_arr, domains, low


cdef Py_ssize_t _domains(
    const i32[::1] col, const u8[::1] rows, const i64[::1] counts, i64[::1] sums, u8[::1] seen,
    Py_ssize_t n_values, i64* low
) noexcept nogil:
    """:func:`domain_sums`' pass: the sums, the domains seen (returned) and their minimum (``low``)."""
    cdef Py_ssize_t v, domains = 0
    _domain_sums(col, rows, counts, sums, seen)
    for v in range(n_values):
        if seen[v]:
            domains += 1
            if sums[v] < low[0]:
                low[0] = sums[v]
    return domains


def filter_pass(
    const i32[::1] col, const i64[::1] sums, i64 offset, i64 max_skew, u8[::1] undecided, u64[::1] bits
):
    """For every row with ``undecided[r]``: label missing sets bit 0, ``sums[col[r]] + offset >
    max_skew`` sets bit 1; either way the row is decided (``undecided[r] = 0``)."""
    cdef Py_ssize_t n = col.shape[0]
    if undecided.shape[0] < n or bits.shape[0] < n:
        raise ValueError("undecided/bits shorter than the column")
    if n < NOGIL_ROWS:
        _filter_rows(col, sums, offset, max_skew, undecided, bits)
    else:
        with nogil:
            _filter_rows(col, sums, offset, max_skew, undecided, bits)


cdef void _filter_rows(
    const i32[::1] col, const i64[::1] sums, i64 offset, i64 max_skew, u8[::1] undecided, u64[::1] bits
) noexcept nogil:
    cdef Py_ssize_t r
    cdef i32 v
    for r in range(col.shape[0]):
        if not undecided[r]:
            continue
        v = col[r]
        if v < 0:
            bits[r] |= 1
            undecided[r] = 0
        elif sums[v] + offset > max_skew:
            bits[r] |= 2
            undecided[r] = 0


def score_pass(
    const i32[::1] col, const i64[::1] values, bint by_row, double weight, double addend, double[::1] total
):
    """Add one ScheduleAnyway constraint's term to every row that has its topology label:
    ``total[r] += cnt * weight + addend`` where ``cnt`` is ``values[r]`` (``by_row``) or
    ``values[col[r]]``. Same two float64 operations as upstream's ``scoreForCount``, in the same
    order; the build does not enable FMA contraction (no ``-mfma``), so results are bit-identical
    to numpy's."""
    cdef Py_ssize_t n = col.shape[0]
    if total.shape[0] < n or (by_row and values.shape[0] < n):
        raise ValueError("total/values shorter than the column")
    if n < NOGIL_ROWS:
        _score_rows(col, values, by_row, weight, addend, total)
    else:
        with nogil:
            _score_rows(col, values, by_row, weight, addend, total)


cdef void _score_rows(
    const i32[::1] col, const i64[::1] values, bint by_row, double weight, double addend, double[::1] total
) noexcept nogil:
    cdef Py_ssize_t r
    cdef i32 v
    cdef double term
    for r in range(col.shape[0]):
        v = col[r]
        if v < 0:
            continue
        if by_row:
            term = <double>values[r] * weight
        else:
            term = <double>values[v] * weight
        total[r] = total[r] + (term + addend)


def round_scores(const double[::1] total):
    """Go's ``math.Round`` of non-negative scores (half away from zero), as int64."""
    cdef Py_ssize_t n = total.shape[0]
    out_arr = np.empty(n, dtype=np.int64)
    cdef i64[::1] out = out_arr
    if n < NOGIL_ROWS:
        _round_rows(total, out)
    else:
        with nogil:
            _round_rows(total, out)
    return out_arr


cdef void _round_rows(const double[::1] total, i64[::1] out) noexcept nogil:
    cdef Py_ssize_t r
    cdef double x
    cdef i64 whole
    for r in range(total.shape[0]):
        x = total[r]
        whole = <i64>x
        out[r] = whole + 1 if x - <double>whole >= 0.5 else whole


def normalize(const i64[::1] raw, const u8[::1] feasible, const u8[::1] ignored):
    """Upstream ``NormalizeScore`` over the feasible rows; ignored and infeasible rows get 0."""
    cdef Py_ssize_t n = feasible.shape[0]
    if raw.shape[0] < n or ignored.shape[0] < n:
        raise ValueError("raw/ignored shorter than feasible")
    out_arr = np.zeros(n, dtype=np.int64)
    cdef i64[::1] out = out_arr
    if n < NOGIL_ROWS:
        _normalize_rows(raw, feasible, ignored, out)
    else:
        with nogil:
            _normalize_rows(raw, feasible, ignored, out)
    return out_arr


cdef void _normalize_rows(const i64[::1] raw, const u8[::1] feasible, const u8[::1] ignored, i64[::1] out) noexcept nogil:
    cdef Py_ssize_t r, n = feasible.shape[0]
    cdef i64 high = 0, low = 0, s, num, q
    cdef double inv
    cdef bint any_scored = False
    for r in range(n):
        if feasible[r] and not ignored[r]:
            s = raw[r]
            if not any_scored or s < low:
                low = s
            if s > high:
                high = s
            any_scored = True
    if not any_scored:
        return
    inv = 1.0 / <double>high if high != 0 else 0.0
    for r in range(n):
        if feasible[r] and not ignored[r]:
            if high == 0:
                out[r] = 100
            else:
                # 64-bit division costs ~40 cycles a row; a float reciprocal and a
                # one-step correction give the exact integer quotient (num < 2**53).
                num = 100 * (high + low - raw[r])
                q = <i64>(<double>num * inv)
                while q * high > num:
                    q -= 1
                while (q + 1) * high <= num:
                    q += 1
                out[r] = q
