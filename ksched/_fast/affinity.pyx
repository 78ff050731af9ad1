"""Topology-domain totals for inter-pod affinity, compiled.

``domain_totals(col, w)``: for every row ``r`` with ``col[r] >= 0``, the sum of ``w`` over all rows
of the same domain (``col`` value); 0 where ``col[r] < 0``. Two passes over the rows and one
scratch array indexed by value id. The numpy reference it must agree with exactly is
``ksched.framework.kernels.affinity_domain_totals_ref``; ``tests/property/test_interpodaffinity_props``
compares them. Sums wrap like Go int64 (they never get near it: pod counts times weights <= 100).
"""

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t
from libc.stdlib cimport calloc, free

from ksched._fast._types cimport NOGIL_ROWS, i64, u64

cnp.import_array()

# numpy.int32 label-value id columns (ksched.cache.node_table); not in _types.pxd, which holds
# the dtypes shared by several kernels.
ctypedef int32_t i32


cdef enum:
    # Four partial sums per domain, one per lane (row % 4): consecutive rows of one domain (a zone
    # column) would otherwise make every add wait on the previous store to the same cell.
    LANES = 4


cdef int _domain_totals(
    const i32[::1] col, const i64[::1] w, i64[::1] out, i64* scratch, Py_ssize_t width
) noexcept nogil:
    cdef Py_ssize_t n = col.shape[0], r
    cdef i32 v
    cdef i64* lane
    for r in range(n):
        v = col[r]
        if v >= 0:
            lane = scratch + (r & (LANES - 1)) * width
            lane[v] = <i64>(<u64>lane[v] + <u64>w[r])
    for r in range(width):
        scratch[r] = <i64>(<u64>scratch[r] + <u64>scratch[width + r] + <u64>scratch[2 * width + r]
                           + <u64>scratch[3 * width + r])
    for r in range(n):
        v = col[r]
        out[r] = scratch[v] if v >= 0 else 0
    return 0


def domain_totals(const i32[::1] col, const i64[::1] w):
    """Per-row domain totals (int64 array of ``len(col)``); ``w`` must cover at least ``len(col)`` rows."""
    cdef Py_ssize_t n = col.shape[0], width
    if w.shape[0] < n:
        raise ValueError(f"weights cover {w.shape[0]} rows, need {n}")
    out_arr = np.zeros(n, dtype=np.int64)
    cdef i64[::1] out = out_arr
    cdef i32 top
    if n < NOGIL_ROWS:
        top = _top(col)
    else:
        with nogil:
            top = _top(col)
    if top < 0:
        return out_arr
    width = <Py_ssize_t>top + 1
    cdef i64* scratch = <i64*>calloc(<size_t>(LANES * width), sizeof(i64))
    if scratch == NULL:
        raise MemoryError()
    try:
        if n < NOGIL_ROWS:
            _domain_totals(col, w, out, scratch, width)
        else:
            with nogil:
                _domain_totals(col, w, out, scratch, width)
    finally:
        free(scratch)
    return out_arr


cdef i32 _top(const i32[::1] col) noexcept nogil:
    """The highest value in ``col`` (-1 when empty or all missing)."""
    cdef Py_ssize_t r
    cdef i32 top = -1
    for r in range(col.shape[0]):
        if col[r] > top:
            top = col[r]
    return top
