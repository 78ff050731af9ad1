# Contract of the resource kernels (ksched/_fast/kernels.pyx).
#
# Every function works on ONE row of the node table; the def wrappers in kernels.pyx loop them over
# rows [0, n). Arrays are C-contiguous along the last axis and of the exact dtypes in _types.pxd;
# the Python side (ksched.framework.kernels and the noderesources plugin) checks that once.
#
# Integer arithmetic follows Go's int64 semantics exactly, because upstream computes in Go:
# products and sums wrap around in two's complement (done through uint64 casts, which C defines,
# instead of signed overflow, which C leaves undefined) and division truncates toward zero
# (cdivision=True; every divisor is known to be > 0).
#
# Resource specs are parallel arrays over the resources one plugin looks at:
#   cols[j]  column in alloc/req (-1: no node has that resource, alloc = requested = 0)
#   src[j]   where the node's requested amount comes from: SRC_REQUESTED = req[row, cols[j]],
#            SRC_NONZERO_CPU = nz[row, 0], SRC_NONZERO_MEMORY = nz[row, 1]
#   pod[j]   the pod's request for that resource, w[j] its weight
#
# Fit failure bits: bit 0 "Too many pods"; for checked resource j, bit 1+2j "Insufficient" and
# bit 2+2j the same, unresolvable (request > allocatable); so at most MAX_FILTER_RESOURCES.

from ksched._fast._types cimport i64, u64, u8, f64

# The codes of these enums are shared with the Python side: ``constants()`` exports them and
# ksched.framework.kernels refuses (BuildError) a module whose codes differ from its CONTRACT.
cdef enum:
    LEAST_ALLOCATED = 0
    MOST_ALLOCATED = 1
    REQUESTED_TO_CAPACITY_RATIO = 2

cdef enum:
    SRC_REQUESTED = 0
    SRC_NONZERO_CPU = 1
    SRC_NONZERO_MEMORY = 2
    MAX_FILTER_RESOURCES = 31

# Upstream's score bounds. Compile-time constants, not module variables: a store through any i64*
# in a loop could alias a variable, so the compiler would reload it (and not strength-reduce the
# multiply) every row.
cdef enum:
    MAX_NODE_SCORE = 100
    MAX_UTILIZATION = 100

# The pod's packed spec for fused_pass: ONE int64 array instead of ten small ones, because every
# array argument of a def function costs a buffer acquisition per call. Built once per request
# shape on the Python side (noderesources.scoring.pack_spec) and cached with the pod spec.
#   spec[0]  flags: SPEC_FILTER | SPEC_FIT | SPEC_BALANCED (which parts to compute)
#   spec[1]  scoring strategy (LEAST_ALLOCATED, ...)
#   spec[2]  kf, spec[3] ks, spec[4] kb, spec[5] m (lengths below); spec[6], spec[7] are 0
#   then     fcols[kf] fpod[kf]                      Fit filter: column, request
#            scols[ks] ssrc[ks] spod[ks] sw[ks]      Fit score: column, src, request, weight
#            bcols[kb] bpod[kb]                      BalancedAllocation: column, request
#            shape_u[m] shape_s[m]                   RequestedToCapacityRatio shape
# so len(spec) == SPEC_HEADER + 2*kf + 4*ks + 2*kb + 2*m (checked).
cdef enum:
    SPEC_HEADER = 8
    SPEC_FILTER = 1
    SPEC_FIT = 2
    SPEC_BALANCED = 4

# Speed-driven choices: the row functions take raw pointers (a row of alloc/req/nz, and the spec
# arrays with their length) rather than memoryviews, because passing a memoryview to a cdef
# function costs an atomic acquisition-count update per call, more than a row's arithmetic. Each
# has an inline twin in kernels.pyx (_fit_bits, _resource_score, _balanced_score) that the generic
# fused sweep inlines; the exported functions below are that same code. The default profile's
# shape has a hand-unrolled scalar sweep (_sweep_two) and the vector sweeps below.

cdef u64 fit_bits_row(const i64* alloc, const i64* req, i64 allowed, i64 count,
                      const i64* cols, const i64* pod, Py_ssize_t k) noexcept nogil

cdef i64 resource_score_row(const i64* alloc, const i64* req, const i64* nz,
                            const i64* cols, const i64* src, const i64* pod, const i64* w, Py_ssize_t k,
                            int strategy, const i64* shape_u, const i64* shape_s,
                            Py_ssize_t m) noexcept nogil

cdef i64 balanced_score_row(const i64* alloc, const i64* req, const i64* cols, const i64* pod,
                            Py_ssize_t k) noexcept nogil

cdef Py_ssize_t select_best_rows(const i64* total, const u8* feasible, Py_ssize_t n, double u) noexcept nogil

# The default shape's vector sweep: AVX2 by run-time dispatch, used by fused_pass; the header
# documents why its results equal the scalar loop's exactly and which values it leaves to the
# scalar loop (every row value of both resources in [0, 2^46); the pod's requests too, Fit
# weights in [1, 2^20], score weights in [0, 2^31)).
cdef extern from "simd_sweep.h" nogil:
    ctypedef struct ks_best:
        i64 top     # maximum of wf*fit + wb*balanced over passing rows so far (INT64_MIN: none)
        i64 ties    # passing rows that reach it
        i64 first   # lowest of them (-1 while top is INT64_MIN)
        i64 last    # highest of them
        i64 n_pass  # passing rows
    ctypedef struct ks_two_pod:
        i64 fp0, fp1, sp0, sp1, w0, w1, bp0, bp1, wf, wb
    enum:
        KS_EXACT_BITS
    void ks_best_init(ks_best* b)
    int ks_simd_level()
    bint ks_two_pod_fits(const ks_two_pod* p)
    Py_ssize_t ks_sweep_two_avx2(Py_ssize_t row, Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr,
                                 Py_ssize_t rr, const i64* pz, const i64* pal, const i64* pco,
                                 const u8* valid, const ks_two_pod* pod, u64* bits, i64* fs, i64* bs,
                                 u8* passed, i64* n_fail, ks_best* best)
