# The C types every kernel uses, one per numpy dtype the Python side allocates.
#
# tests/property/test_kernels_types.py pins each typedef to its numpy dtype (size and
# signedness), so a kernel can never be handed an array whose element type differs from the one
# it was compiled for.

from libc.stdint cimport int64_t, uint64_t, uint8_t

ctypedef int64_t i64   # numpy.int64: resource quantities, counts, scores
ctypedef uint64_t u64  # numpy.uint64: per-row filter failure bitsets
ctypedef uint8_t u8    # numpy.bool_ viewed as numpy.uint8: row masks
ctypedef double f64    # numpy.float64: fractions in BalancedAllocation

# Below this many rows a kernel keeps the GIL for its sweep. Releasing it lets the I/O thread run
# beside the sweep, but that thread takes the GIL at once and the scheduling thread then waits to
# get it back: at 5,000 rows a sweep lasts about 10 us, less than the hand-over costs (a futex
# wake and a thread switch each way), and a cycle makes several. Sweeps over tens of thousands of
# rows still release it. kernels.GIL_KEPT_BELOW_ROWS shows the value to Python.
cdef enum:
    NOGIL_ROWS = 32768
