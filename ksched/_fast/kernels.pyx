"""Resource kernels over node-table rows, and the final node selection.

Each ``cdef ... noexcept nogil`` function (contract and arithmetic rules in ``kernels.pxd``) has a
``def`` wrapper that checks shapes once, allocates the outputs and loops, releasing the GIL for the
loop only when it covers at least ``NOGIL_ROWS`` rows (``_types.pxd`` says why). The numpy
references they must agree with exactly live in ``ksched.framework.plugins.noderesources.scoring``
(resource kernels) and ``ksched.framework.kernels.select_best_ref``; the property tests compare
them on random clusters.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport fabs, round, sqrt
from libc.stdint cimport INT64_MIN

from ksched._fast._types cimport NOGIL_ROWS, f64, i64, u8, u64

cnp.import_array()

# The sweeps fused_pass has for the default profile's shape, slowest first: "generic" (_sweep, the
# loop every other shape takes), "none" (_sweep_two, unrolled by hand, no vector instructions),
# and the vector sweeps of simd_sweep.h. The best the CPU runs is asked once and used;
# ``set_simd`` picks another, so that tests and benches can run the same input through each.
SWEEPS = ("generic", "none", "avx2")
SIMD_LEVELS = SWEEPS[1:]
cdef int _simd_max = ks_simd_level()  # index into SIMD_LEVELS
cdef int _simd_use = _simd_max  # index into SIMD_LEVELS; -1: "generic"

GIL_KEPT_BELOW_ROWS = NOGIL_ROWS  # for Python: sweeps of fewer rows keep the GIL (see _types.pxd)


# --------------------------------------------------------------------------- Go int64 arithmetic
cdef inline i64 wadd(i64 a, i64 b) noexcept nogil:
    return <i64>(<u64>a + <u64>b)


cdef inline i64 wsub(i64 a, i64 b) noexcept nogil:
    return <i64>(<u64>a - <u64>b)


cdef inline i64 wmul(i64 a, i64 b) noexcept nogil:
    return <i64>(<u64>a * <u64>b)


cdef inline i64 cell(const i64* row, i64 col) noexcept nogil:
    """``row[col]``, or 0 for col -1 (a resource no node has)."""
    if col < 0:
        return 0
    return row[col]


# --------------------------------------------------------------------------- per-row kernels
cdef u64 fit_bits_row(const i64* alloc, const i64* req, i64 allowed, i64 count,
                      const i64* cols, const i64* pod, Py_ssize_t k) noexcept nogil:
    return _fit_bits(alloc, req, allowed, count, cols, pod, k)


cdef inline u64 _fit_bits(const i64* alloc, const i64* req, i64 allowed, i64 count,
                          const i64* cols, const i64* pod, Py_ssize_t k) noexcept nogil:
    cdef u64 bits = 0
    cdef Py_ssize_t j
    cdef i64 a, p
    if count + 1 > allowed:
        bits = 1
    for j in range(k):
        a = cell(alloc, cols[j])
        p = pod[j]
        if p > wsub(a, cell(req, cols[j])):
            # bit 1+2j: "Insufficient <r>"; bit 2+2j: the same, unresolvable (p > allocatable)
            bits |= (<u64>1) << (1 + 2 * j + (1 if p > a else 0))
    return bits


cdef inline i64 broken_line(i64 x, const i64* su, const i64* ss, Py_ssize_t m) noexcept nogil:
    cdef Py_ssize_t t
    for t in range(m):
        if x <= su[t]:
            if t == 0:
                return ss[0]
            return ss[t - 1] + (ss[t] - ss[t - 1]) * (x - su[t - 1]) / (su[t] - su[t - 1])
    return ss[m - 1]


cdef i64 resource_score_row(const i64* alloc, const i64* req, const i64* nz,
                            const i64* cols, const i64* src, const i64* pod, const i64* w, Py_ssize_t k,
                            int strategy, const i64* shape_u, const i64* shape_s,
                            Py_ssize_t m) noexcept nogil:
    return _resource_score(alloc, req, nz, cols, src, pod, w, k, strategy, shape_u, shape_s, m)


cdef inline i64 _div_weights(i64 num, i64 den) noexcept nogil:
    """``num / den`` (C, truncating), with the default profile's weight sums (1 and 2) done without
    a hardware divide, which is slow next to the rest of a row's work."""
    if den == 1:
        return num
    if den == 2 and num >= 0:
        return num >> 1
    return num / den


cdef inline i64 _resource_score(const i64* alloc, const i64* req, const i64* nz,
                                const i64* cols, const i64* src, const i64* pod, const i64* w, Py_ssize_t k,
                                int strategy, const i64* shape_u, const i64* shape_s,
                                Py_ssize_t m) noexcept nogil:
    cdef i64 node_score = 0
    cdef i64 weight_sum = 0
    cdef i64 a, r, s, base
    cdef Py_ssize_t j
    for j in range(k):
        a = cell(alloc, cols[j])
        if a == 0:
            continue
        if src[j] == 0:
            base = cell(req, cols[j])
        else:
            base = nz[src[j] - 1]
        r = wadd(base, pod[j])
        if strategy == LEAST_ALLOCATED:
            s = 0 if r > a else wmul(wsub(a, r), MAX_NODE_SCORE) / a
        elif strategy == MOST_ALLOCATED:
            if r > a:
                r = a
            s = wmul(r, MAX_NODE_SCORE) / a
        else:
            if r > a:
                s = broken_line(MAX_UTILIZATION, shape_u, shape_s, m)
            else:
                s = broken_line(wmul(r, MAX_UTILIZATION) / a, shape_u, shape_s, m)
            if s <= 0:
                continue  # upstream quirk: only positive resource scores are averaged
        node_score = wadd(node_score, wmul(s, w[j]))
        weight_sum = wadd(weight_sum, w[j])
    if weight_sum == 0:
        return 0
    if strategy == REQUESTED_TO_CAPACITY_RATIO:
        return <i64>round(<f64>node_score / <f64>weight_sum)
    return _div_weights(node_score, weight_sum)


cdef inline f64 fraction(const i64* alloc, const i64* req, i64 col, i64 pod) noexcept nogil:
    cdef f64 f = <f64>wadd(cell(req, col), pod) / <f64>cell(alloc, col)
    return 1.0 if f > 1.0 else f


cdef i64 balanced_score_row(const i64* alloc, const i64* req, const i64* cols, const i64* pod,
                            Py_ssize_t k) noexcept nogil:
    return _balanced_score(alloc, req, cols, pod, k)


cdef inline i64 _balanced_score(const i64* alloc, const i64* req, const i64* cols, const i64* pod,
                                Py_ssize_t k) noexcept nogil:
    # Same floating-point operations, in the same order, as upstream's balancedResourceScorer and
    # as scoring.balanced_score_ref: bit-identical results.
    cdef Py_ssize_t j
    cdef Py_ssize_t cnt = 0
    cdef f64 total = 0.0, f0 = 0.0, f1 = 0.0, f, mean, acc, std = 0.0
    for j in range(k):
        if cell(alloc, cols[j]) == 0:
            continue
        f = fraction(alloc, req, cols[j], pod[j])
        total += f
        if cnt == 0:
            f0 = f
        elif cnt == 1:
            f1 = f
        cnt += 1
    if cnt == 2:
        std = fabs((f0 - f1) / 2.0)
    elif cnt > 2:
        mean = total / <f64>cnt
        acc = 0.0
        for j in range(k):
            if cell(alloc, cols[j]) == 0:
                continue
            f = fraction(alloc, req, cols[j], pod[j])
            acc = acc + (f - mean) * (f - mean)
        std = sqrt(acc / <f64>cnt)
    return <i64>((1.0 - std) * <f64>MAX_NODE_SCORE)


cdef Py_ssize_t select_best_rows(const i64* total, const u8* feasible, Py_ssize_t n, double u) noexcept nogil:
    cdef Py_ssize_t i, k, count = 0
    cdef i64 best = 0, v
    for i in range(n):
        if feasible[i]:
            v = total[i]
            if count == 0 or v > best:
                best = v
                count = 1
            elif v == best:
                count += 1
    if count == 0:
        return -1
    k = <Py_ssize_t>(u * <double>count)
    if k > count - 1:
        k = count - 1
    for i in range(n):
        if feasible[i] and total[i] == best:
            if k == 0:
                return i
            k -= 1
    return -1


# --------------------------------------------------------------------------- def wrappers
cdef inline const i64* p1(const i64[::1] a) noexcept:
    """Data pointer of a 1-d spec array (NULL when empty: it is then never read)."""
    return &a[0] if a.shape[0] > 0 else NULL


cdef inline const i64* p2(const i64[:, ::1] a) noexcept:
    return &a[0, 0] if a.shape[0] > 0 and a.shape[1] > 0 else NULL


cdef inline void _check_rows(str name, Py_ssize_t got, Py_ssize_t n) except *:
    if got < n:
        raise ValueError(f"{name} has {got} rows, the kernel needs {n}")


cdef inline void _check_spec(tuple arrays, Py_ssize_t m) except *:
    for a in arrays:
        if a.shape[0] != m:
            raise ValueError(f"resource spec arrays differ in length ({a.shape[0]} != {m})")


cdef inline void _check_cols(const i64[::1] cols, Py_ssize_t width, bint allow_missing) except *:
    cdef Py_ssize_t j
    for j in range(cols.shape[0]):
        if cols[j] >= width or cols[j] < (-1 if allow_missing else 0):
            raise ValueError(f"resource column {cols[j]} outside the table's {width} columns")


def fit_filter(const i64[:, ::1] alloc, const i64[:, ::1] req, const i64[::1] allowed,
               const i64[::1] count, const i64[::1] cols, const i64[::1] pod):
    """Failure bits of NodeResourcesFit for rows ``[0, alloc.shape[0])`` (layout in kernels.pxd)."""
    cdef Py_ssize_t n = alloc.shape[0], ra = alloc.shape[1], rr = req.shape[1], k = cols.shape[0]
    _check_rows("requested", req.shape[0], n)
    _check_rows("allowed_pods", allowed.shape[0], n)
    _check_rows("pod_count", count.shape[0], n)
    _check_spec((cols,), pod.shape[0])
    _check_cols(cols, min(ra, rr), True)
    if k > MAX_FILTER_RESOURCES:
        raise ValueError(f"at most {MAX_FILTER_RESOURCES} resources fit in the 64 failure bits")
    out = np.empty(n, dtype=np.uint64)
    cdef u64[::1] bits = out
    cdef const i64* pa = p2(alloc)
    cdef const i64* pr = p2(req)
    cdef const i64* pc = p1(cols)
    cdef const i64* pp = p1(pod)
    cdef const i64* pal = p1(allowed)
    cdef const i64* pco = p1(count)
    cdef u64* pb = &bits[0] if n else NULL
    if n < NOGIL_ROWS:
        _fit_bits_rows(n, pa, ra, pr, rr, pal, pco, pc, pp, k, pb)
    else:
        with nogil:
            _fit_bits_rows(n, pa, ra, pr, rr, pal, pco, pc, pp, k, pb)
    return out


cdef void _fit_bits_rows(Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr, Py_ssize_t rr,
                         const i64* allowed, const i64* count, const i64* pc, const i64* pp, Py_ssize_t k,
                         u64* bits) noexcept nogil:
    cdef Py_ssize_t row
    for row in range(n):
        bits[row] = fit_bits_row(pa + row * ra, pr + row * rr, allowed[row], count[row], pc, pp, k)


def resource_score(const i64[:, ::1] alloc, const i64[:, ::1] req, const i64[:, ::1] nz,
                   const i64[::1] cols, const i64[::1] src, const i64[::1] pod, const i64[::1] w,
                   int strategy, const i64[::1] shape_u, const i64[::1] shape_s):
    """NodeResourcesFit scores of every row; returns ``(scores, all scores within 0..100)``."""
    cdef Py_ssize_t n = alloc.shape[0], ra = alloc.shape[1], rr = req.shape[1], k = cols.shape[0]
    cdef Py_ssize_t m = shape_u.shape[0]
    cdef bint in_range = True
    _check_rows("requested", req.shape[0], n)
    _check_rows("nonzero_requested", nz.shape[0], n)
    _check_spec((cols, src, pod), w.shape[0])
    _check_spec((shape_u,), shape_s.shape[0])
    _check_cols(cols, min(ra, rr), True)
    if nz.shape[1] != 2:
        raise ValueError("nonzero_requested must have 2 columns")
    if strategy == REQUESTED_TO_CAPACITY_RATIO and m == 0:
        raise ValueError("RequestedToCapacityRatio needs at least one shape point")
    out = np.empty(n, dtype=np.int64)
    cdef i64[::1] s = out
    cdef const i64* pa = p2(alloc)
    cdef const i64* pr = p2(req)
    cdef const i64* pz = p2(nz)
    cdef const i64* pc = p1(cols)
    cdef const i64* ps = p1(src)
    cdef const i64* pp = p1(pod)
    cdef const i64* pw = p1(w)
    cdef const i64* pu = p1(shape_u)
    cdef const i64* pv = p1(shape_s)
    cdef i64* po = &s[0] if n else NULL
    if n < NOGIL_ROWS:
        in_range = _resource_score_rows(n, pa, ra, pr, rr, pz, pc, ps, pp, pw, k, strategy, pu, pv, m, po)
    else:
        with nogil:
            in_range = _resource_score_rows(n, pa, ra, pr, rr, pz, pc, ps, pp, pw, k, strategy, pu, pv, m, po)
    return out, bool(in_range)


cdef bint _resource_score_rows(Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr, Py_ssize_t rr,
                               const i64* pz, const i64* pc, const i64* ps, const i64* pp, const i64* pw,
                               Py_ssize_t k, int strategy, const i64* pu, const i64* pv, Py_ssize_t m,
                               i64* out) noexcept nogil:
    """The rows' scores into ``out``; whether every one is within 0..100."""
    cdef Py_ssize_t row
    cdef bint in_range = True
    for row in range(n):
        out[row] = resource_score_row(pa + row * ra, pr + row * rr, pz + row * 2, pc, ps, pp, pw, k, strategy,
                                      pu, pv, m)
        if out[row] < 0 or out[row] > MAX_NODE_SCORE:
            in_range = False
    return in_range


def balanced_score(const i64[:, ::1] alloc, const i64[:, ::1] req, const i64[::1] cols,
                   const i64[::1] pod):
    """NodeResourcesBalancedAllocation scores of every row; ``(scores, all within 0..100)``."""
    cdef Py_ssize_t n = alloc.shape[0], ra = alloc.shape[1], rr = req.shape[1], k = cols.shape[0]
    cdef bint in_range = True
    _check_rows("requested", req.shape[0], n)
    _check_spec((cols,), pod.shape[0])
    _check_cols(cols, min(ra, rr), True)
    out = np.empty(n, dtype=np.int64)
    cdef i64[::1] s = out
    cdef const i64* pa = p2(alloc)
    cdef const i64* pr = p2(req)
    cdef const i64* pc = p1(cols)
    cdef const i64* pp = p1(pod)
    cdef i64* po = &s[0] if n else NULL
    if n < NOGIL_ROWS:
        in_range = _balanced_rows(n, pa, ra, pr, rr, pc, pp, k, po)
    else:
        with nogil:
            in_range = _balanced_rows(n, pa, ra, pr, rr, pc, pp, k, po)
    return out, bool(in_range)


cdef bint _balanced_rows(Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr, Py_ssize_t rr,
                         const i64* pc, const i64* pp, Py_ssize_t k, i64* out) noexcept nogil:
    """The rows' scores into ``out``; whether every one is within 0..100."""
    cdef Py_ssize_t row
    cdef bint in_range = True
    for row in range(n):
        out[row] = balanced_score_row(pa + row * ra, pr + row * rr, pc, pp, k)
        if out[row] < 0 or out[row] > MAX_NODE_SCORE:
            in_range = False
    return in_range


# --------------------------------------------------------------------------- the fused sweep
cdef void _pass_best(Py_ssize_t lo, Py_ssize_t hi, const u8* valid, const u64* bits, const i64* fs, i64 wf,
                     const i64* bs, i64 wb, u8* passed, ks_best* best) noexcept nogil:
    """After the sweep, for rows ``[lo, hi)``: ``passed[row] = valid[row] and bits[row] == 0``
    (``bits``/``fs``/``bs`` NULL: no failures / that part counts 0), and where ``wf*fs + wb*bs``
    peaks over those rows, continuing the running summary ``best`` (``simd_sweep.h``; rows
    after every row it has seen; ``_best_finish`` completes it).

    A loop of its own rather than more work in the scalar sweep: there, the extra live values
    would spill registers, and a byte store (which may alias anything) would force reloads; here
    the arrays the sweep just wrote are still in cache.

    One pass for the maximum and its ties together. The loop is instruction-bound, so it keeps to
    few instructions and one rarely taken branch: a new maximum (a handful of times in a
    cluster's rows, and predictable when the scores rise steadily) resets the count; ties are
    counted without a branch, so rows that tie in a random pattern cause no mispredictions.
    """
    cdef Py_ssize_t row, n_pass = 0, ties = best.ties, first = best.first, last = best.last
    cdef bint p, eq
    cdef i64 v, top = best.top
    if bits != NULL and fs != NULL and bs != NULL:  # the default profile: no per-row NULL tests
        for row in range(lo, hi):
            p = (valid[row] != 0) & (bits[row] == 0)
            passed[row] = p
            n_pass += p
            v = wadd(wmul(fs[row], wf), wmul(bs[row], wb)) if p else INT64_MIN
            if v > top:
                top = v
                ties = 0
                first = row
            eq = (v == top) & p
            ties += eq
            last = row if eq else last
    else:
        for row in range(lo, hi):
            p = (valid[row] != 0) & ((bits[row] if bits != NULL else 0) == 0)
            passed[row] = p
            n_pass += p
            v = wadd(wmul(fs[row], wf) if fs != NULL else 0, wmul(bs[row], wb) if bs != NULL else 0)
            v = v if p else INT64_MIN
            if v > top:
                top = v
                ties = 0
                first = row
            eq = (v == top) & p
            ties += eq
            last = row if eq else last
    best.top = top
    best.ties = ties
    best.first = first
    best.last = last
    best.n_pass += n_pass


cdef void _best_finish(ks_best* best, const u8* passed, Py_ssize_t n) noexcept nogil:
    """The summary as ``fused_pass`` reports it: ``top`` 0 when no row passes, and ``first`` found
    when every passing row sums to exactly INT64_MIN (wrapped around), so that no row ever raised
    the maximum above its start value: the first tie is then the first passing row."""
    cdef Py_ssize_t row
    if best.ties and best.first < 0:
        for row in range(n):
            if passed[row]:
                best.first = row
                break
    if best.n_pass == 0:
        best.top = 0


cdef void _sweep(Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr, Py_ssize_t rr,
                 const i64* pz, const i64* pal, const i64* pco,
                 bint do_filter, const i64* fcols, const i64* fpod, Py_ssize_t kf,
                 bint do_fit, const i64* scols, const i64* ssrc, const i64* spod, const i64* sw,
                 Py_ssize_t ks, int strategy, const i64* su, const i64* sv, Py_ssize_t m,
                 bint do_bal, const i64* bcols, const i64* bpod, Py_ssize_t kb,
                 u64* bits, i64* fs, i64* bs, Py_ssize_t* n_fail, bint* fit_ok,
                 bint* bal_ok) noexcept nogil:
    """The row loop of ``fused_pass`` for any spec (``_pass_best`` follows)."""
    cdef Py_ssize_t row, fails = 0
    cdef const i64* a_row
    cdef const i64* r_row
    cdef u64 b = 0
    cdef i64 v, vf = 0, vb = 0
    cdef bint f_ok = True, b_ok = True
    for row in range(n):
        a_row = pa + row * ra
        r_row = pr + row * rr
        if do_filter:
            b = _fit_bits(a_row, r_row, pal[row], pco[row], fcols, fpod, kf)
            bits[row] = b
            fails += b != 0
        if do_fit:
            vf = _resource_score(a_row, r_row, pz + row * 2, scols, ssrc, spod, sw, ks, strategy, su, sv, m)
            fs[row] = vf
            f_ok &= 0 <= vf <= MAX_NODE_SCORE
        if do_bal:
            vb = _balanced_score(a_row, r_row, bcols, bpod, kb)
            bs[row] = vb
            b_ok &= 0 <= vb <= MAX_NODE_SCORE
    n_fail[0] = fails
    fit_ok[0] = f_ok
    bal_ok[0] = b_ok


cdef void _sweep_two(Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr, Py_ssize_t rr,
                     const i64* pz, const i64* pal, const i64* pco, const i64* fpod, const i64* spod,
                     const i64* sw, const i64* bpod, u64* bits, i64* fs, i64* bs, Py_ssize_t* n_fail,
                     bint* fit_ok, bint* bal_ok) noexcept nogil:
    """``_sweep`` for the default profile's shape, written out by hand: the pod requests cpu and
    memory (table columns 0 and 1), the filter checks both, LeastAllocated scores both from the
    non-zero requests (``nz``), BalancedAllocation uses both.

    The same arithmetic as ``_fit_bits``, ``_resource_score`` and ``_balanced_score`` (the property
    tests compare it with the numpy references), minus their per-resource loops, ``cell`` checks and
    ``src``/strategy branches, and with each row's two columns loaded once for all three parts.
    It is the fast path where no vector sweep runs (no AVX2, another architecture, a pod or rows
    outside the vector sweep's exact range) and takes each vector sweep's last partial block.
    """
    cdef Py_ssize_t row, fails = 0
    cdef i64 fp0 = fpod[0], fp1 = fpod[1], sp0 = spod[0], sp1 = spod[1], w0 = sw[0], w1 = sw[1]
    cdef i64 bp0 = bpod[0], bp1 = bpod[1]
    cdef u64 b
    cdef i64 a0, a1, x0, x1, r0, r1, s0, s1, v, vf, node_score, weight_sum
    cdef f64 f0, f1, std
    cdef u64 bad_fit = 0, bad_bal = 0
    for row in range(n):
        a0 = pa[row * ra]
        a1 = pa[row * ra + 1]
        x0 = pr[row * rr]
        x1 = pr[row * rr + 1]
        # Fit filter (_fit_bits)
        b = 1 if pco[row] + 1 > pal[row] else 0
        if fp0 > wsub(a0, x0):
            b |= (<u64>1) << (1 + (1 if fp0 > a0 else 0))
        if fp1 > wsub(a1, x1):
            b |= (<u64>1) << (3 + (1 if fp1 > a1 else 0))
        bits[row] = b
        fails += b != 0
        # Fit score, LeastAllocated (_resource_score); a resource with allocatable 0 drops out
        r0 = wadd(pz[row * 2], sp0)
        r1 = wadd(pz[row * 2 + 1], sp1)
        s0 = 0 if r0 > a0 else wmul(wsub(a0, r0), MAX_NODE_SCORE) / (a0 if a0 != 0 else 1)
        s1 = 0 if r1 > a1 else wmul(wsub(a1, r1), MAX_NODE_SCORE) / (a1 if a1 != 0 else 1)
        node_score = wadd(wmul(s0, w0) if a0 != 0 else 0, wmul(s1, w1) if a1 != 0 else 0)
        weight_sum = wadd(w0 if a0 != 0 else 0, w1 if a1 != 0 else 0)
        vf = 0 if weight_sum == 0 else _div_weights(node_score, weight_sum)
        fs[row] = vf
        bad_fit |= <u64>vf > MAX_NODE_SCORE
        # BalancedAllocation (_balanced_score, two resources); a 0 allocatable gives inf/nan here,
        # unused: std is 0 unless both resources are present
        f0 = <f64>wadd(x0, bp0) / <f64>a0
        f1 = <f64>wadd(x1, bp1) / <f64>a1
        if f0 > 1.0:
            f0 = 1.0
        if f1 > 1.0:
            f1 = 1.0
        std = fabs((f0 - f1) / 2.0) if a0 != 0 and a1 != 0 else 0.0
        v = <i64>((1.0 - std) * <f64>MAX_NODE_SCORE)
        bs[row] = v
        bad_bal |= <u64>v > MAX_NODE_SCORE
    n_fail[0] = fails
    fit_ok[0] = bad_fit == 0
    bal_ok[0] = bad_bal == 0


cdef void _sweep_two_pass(Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr, Py_ssize_t rr,
                          const i64* pz, const i64* pal, const i64* pco, const u8* valid, const i64* fpod,
                          const i64* spod, const i64* sw, const i64* bpod, i64 wf, i64 wb, u64* bits, i64* fs,
                          i64* bs, u8* passed, Py_ssize_t* n_fail, bint* fit_ok, bint* bal_ok,
                          ks_best* best) noexcept nogil:
    """``_sweep_two`` and ``_pass_best`` for ``fused_pass``, through the AVX2 sweep of
    ``simd_sweep.h`` when the CPU has it and the pod's values allow it; a block of four rows whose
    values leave the exactly-computable range, and the last rows short of a block,
    run the scalar loops, and every row does when the vector path is off (``set_simd``) or
    unavailable."""
    cdef ks_two_pod pod
    pod.fp0, pod.fp1, pod.sp0, pod.sp1 = fpod[0], fpod[1], spod[0], spod[1]
    pod.w0, pod.w1, pod.bp0, pod.bp1, pod.wf, pod.wb = sw[0], sw[1], bpod[0], bpod[1], wf, wb
    cdef Py_ssize_t row = 0, end, seg_fail = 0
    cdef i64 fails = 0
    cdef bint seg_fit = True, seg_bal = True, f_ok = True, b_ok = True
    cdef int level = _simd_use
    cdef Py_ssize_t block = 4
    if level == 0 or not ks_two_pod_fits(&pod):
        _sweep_two(n, pa, ra, pr, rr, pz, pal, pco, fpod, spod, sw, bpod, bits, fs, bs, n_fail, fit_ok, bal_ok)
        _pass_best(0, n, valid, bits, fs, wf, bs, wb, passed, best)
        return
    while row < n:
        row = ks_sweep_two_avx2(row, n, pa, ra, pr, rr, pz, pal, pco, valid, &pod, bits, fs, bs, passed,
                                &fails, best)
        if row >= n:
            break
        end = min(row + block, n)
        _sweep_two(end - row, pa + row * ra, ra, pr + row * rr, rr, pz + row * 2, pal + row, pco + row,
                   fpod, spod, sw, bpod, bits + row, fs + row, bs + row, &seg_fail, &seg_fit, &seg_bal)
        _pass_best(row, end, valid, bits, fs, wf, bs, wb, passed, best)
        fails += seg_fail
        f_ok &= seg_fit
        b_ok &= seg_bal
        row = end
    n_fail[0] = fails
    fit_ok[0] = f_ok
    bal_ok[0] = b_ok


cdef inline const i64* _table(object arr, int ndim, Py_ssize_t n, Py_ssize_t width, str name) except? NULL:
    """Data pointer of a node-table array after checking dtype, layout and at least ``n`` rows.

    Cheap C-level checks instead of typed memoryviews, whose acquisition per argument and call
    costs more than the checks.
    """
    if not cnp.PyArray_Check(arr):
        raise TypeError(f"{name} must be a numpy array")
    cdef cnp.ndarray a = <cnp.ndarray>arr
    if cnp.PyArray_TYPE(a) != cnp.NPY_INT64 or cnp.PyArray_NDIM(a) != ndim or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{name} must be a C-contiguous {ndim}-d int64 array")
    if a.shape[0] < n:
        raise ValueError(f"{name} has {a.shape[0]} rows, the kernel needs {n}")
    if ndim == 2 and width >= 0 and a.shape[1] != width:
        raise ValueError(f"{name} has {a.shape[1]} columns, expected {width}")
    return <const i64*>cnp.PyArray_DATA(a)


cdef inline object _empty(Py_ssize_t n, int typenum):
    cdef cnp.npy_intp dims[1]
    dims[0] = n
    return cnp.PyArray_EMPTY(1, dims, typenum, 0)


cdef inline void _check_spec_cols(const i64* cols, Py_ssize_t k, Py_ssize_t width) except *:
    cdef Py_ssize_t j
    for j in range(k):
        if cols[j] >= width or cols[j] < -1:
            raise ValueError(f"resource column {cols[j]} outside the table's {width} columns")


cdef struct _Spec:
    # The pod's packed spec (layout in kernels.pxd), split into its parts.
    bint do_filter
    bint do_fit
    bint do_bal
    int strategy
    Py_ssize_t kf, ks, kb, m
    const i64* fcols
    const i64* fpod
    const i64* scols
    const i64* ssrc
    const i64* spod
    const i64* sw
    const i64* bcols
    const i64* bpod
    const i64* su
    const i64* sv


cdef int _parse_spec(object spec, _Spec* s, Py_ssize_t width) except -1:
    """Split the packed spec into ``s`` after checking its header, length and columns (the table
    has ``width`` columns) and what its parts ask for."""
    cdef const i64* sp = _table(spec, 1, SPEC_HEADER, 0, "spec")
    cdef Py_ssize_t slen = (<cnp.ndarray>spec).shape[0]
    s.kf, s.ks, s.kb, s.m = sp[2], sp[3], sp[4], sp[5]
    if (s.kf < 0 or s.ks < 0 or s.kb < 0 or s.m < 0
            or slen != SPEC_HEADER + 2 * s.kf + 4 * s.ks + 2 * s.kb + 2 * s.m):
        raise ValueError(f"spec of length {slen} does not match its header {list(spec[:SPEC_HEADER])}")
    s.do_filter = (sp[0] & SPEC_FILTER) != 0
    s.do_fit = (sp[0] & SPEC_FIT) != 0
    s.do_bal = (sp[0] & SPEC_BALANCED) != 0
    s.strategy = <int>sp[1]
    s.fcols = sp + SPEC_HEADER
    s.fpod = s.fcols + s.kf
    s.scols = s.fpod + s.kf
    s.ssrc = s.scols + s.ks
    s.spod = s.ssrc + s.ks
    s.sw = s.spod + s.ks
    s.bcols = s.sw + s.ks
    s.bpod = s.bcols + s.kb
    s.su = s.bpod + s.kb
    s.sv = s.su + s.m
    _check_spec_cols(s.fcols, s.kf, width)
    _check_spec_cols(s.scols, s.ks, width)
    _check_spec_cols(s.bcols, s.kb, width)
    if s.do_filter and s.kf > MAX_FILTER_RESOURCES:
        raise ValueError(f"at most {MAX_FILTER_RESOURCES} resources fit in the 64 failure bits")
    if s.do_fit and not 0 <= s.strategy <= REQUESTED_TO_CAPACITY_RATIO:
        raise ValueError(f"unknown scoring strategy {s.strategy}")
    if s.do_fit and s.strategy == REQUESTED_TO_CAPACITY_RATIO and s.m == 0:
        raise ValueError("RequestedToCapacityRatio needs at least one shape point")
    return 0


cdef inline bint _default_shape(const _Spec* s, Py_ssize_t ra, Py_ssize_t rr) noexcept nogil:
    """The default profile with a pod that requests cpu and memory: what ``_sweep_two_pass`` runs."""
    return (s.do_filter and s.do_fit and s.do_bal and s.strategy == LEAST_ALLOCATED
            and s.kf == 2 and s.ks == 2 and s.kb == 2 and ra >= 2 and rr >= 2
            and s.fcols[0] == 0 and s.fcols[1] == 1 and s.scols[0] == 0 and s.scols[1] == 1
            and s.ssrc[0] == SRC_NONZERO_CPU and s.ssrc[1] == SRC_NONZERO_MEMORY
            and s.bcols[0] == 0 and s.bcols[1] == 1)


cdef inline const u8* _bools(object arr, Py_ssize_t n, str name) except? NULL:
    """Data pointer of a C-contiguous 1-d bool array of at least ``n`` rows."""
    if not cnp.PyArray_Check(arr):
        raise TypeError(f"{name} must be a numpy array")
    cdef cnp.ndarray a = <cnp.ndarray>arr
    if cnp.PyArray_TYPE(a) != cnp.NPY_BOOL or cnp.PyArray_NDIM(a) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{name} must be a C-contiguous 1-d bool array")
    if a.shape[0] < n:
        raise ValueError(f"{name} has {a.shape[0]} rows, the kernel needs {n}")
    return <const u8*>cnp.PyArray_DATA(a)


cdef void _fused_rows(Py_ssize_t n, const i64* pa, Py_ssize_t ra, const i64* pr, Py_ssize_t rr, const i64* pz,
                      const i64* pal, const i64* pco, const u8* pv, const _Spec* s, i64 wf, i64 wb,
                      u64* bits, i64* fs, i64* bs, u8* ps, Py_ssize_t* n_fail, bint* fit_ok, bint* bal_ok,
                      ks_best* best) noexcept nogil:
    """:func:`fused_pass`'s sweep, its outputs through the pointers."""
    if _simd_use >= 0 and _default_shape(s, ra, rr):
        _sweep_two_pass(n, pa, ra, pr, rr, pz, pal, pco, pv, s.fpod, s.spod, s.sw, s.bpod, wf, wb,
                        bits, fs, bs, ps, n_fail, fit_ok, bal_ok, best)
    else:
        _sweep(n, pa, ra, pr, rr, pz, pal, pco, s.do_filter, s.fcols, s.fpod, s.kf,
               s.do_fit, s.scols, s.ssrc, s.spod, s.sw, s.ks, s.strategy, s.su, s.sv, s.m,
               s.do_bal, s.bcols, s.bpod, s.kb, bits, fs, bs, n_fail, fit_ok, bal_ok)
        _pass_best(0, n, pv, bits, fs, wf if s.do_fit else 0, bs, wb if s.do_bal else 0, ps, best)
    _best_finish(best, ps, n)


def fused_pass(alloc, req, nz, allowed, count, valid, Py_ssize_t n, spec, i64 wf, i64 wb):
    """Fit bits, Fit score and BalancedAllocation score of rows ``[0, n)`` in one sweep, with the
    pass mask and where the weighted score sum peaks among the passing rows.

    ``alloc``/``req``/``nz``/``allowed``/``count`` and the bool row mask ``valid`` are the node
    table's whole arrays (only the first ``n`` rows are read, so the caller does not slice);
    ``spec`` is the pod's packed int64 spec (layout in ``kernels.pxd``). A row *passes* when it
    is valid and has no Fit failure bit (every valid row passes when the filter part is off).

    Returns the twelve fields of ``ksched.framework.kernels.FusedPass``, in its order, as a plain
    tuple (that wrapper names them): ``(bits, fit, fit_in_range, balanced, balanced_in_range,
    failing_rows, passed, n_passed, best, ties, first, last)``. A part the spec leaves out is None
    and counts 0 in ``wf * fit + wb * balanced`` (Go int64 arithmetic); ``failing_rows`` counts
    rows with any failure bit; ``best``, ``ties``, ``first`` and ``last`` are that sum's maximum
    over the passing rows, how many rows reach it and the lowest and highest of them (``best``
    0, ``ties`` 0 and ``first == last == -1`` when no row passes).

    The default profile's shape (cpu and memory, LeastAllocated, both parts) runs through
    ``_sweep_two_pass``: the AVX2 sweep of ``simd_sweep.h`` when the CPU has it, else
    the hand-unrolled scalar loop, with results identical to the generic loop's (``sweeps``,
    ``set_simd``).
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    cdef const i64* pa = _table(alloc, 2, n, -1, "allocatable")
    cdef const i64* pr = _table(req, 2, n, -1, "requested")
    cdef Py_ssize_t ra = (<cnp.ndarray>alloc).shape[1], rr = (<cnp.ndarray>req).shape[1]
    cdef const i64* pz = _table(nz, 2, n, 2, "nonzero_requested")
    cdef const i64* pal = _table(allowed, 1, n, 0, "allowed_pods")
    cdef const i64* pco = _table(count, 1, n, 0, "pod_count")
    cdef const u8* pv = _bools(valid, n, "valid")
    cdef _Spec s
    _parse_spec(spec, &s, min(ra, rr))
    bits_out = _empty(n, cnp.NPY_UINT64) if s.do_filter else None
    fit_out = _empty(n, cnp.NPY_INT64) if s.do_fit else None
    bal_out = _empty(n, cnp.NPY_INT64) if s.do_bal else None
    pass_out = _empty(n, cnp.NPY_BOOL)
    cdef u64* bits = <u64*>cnp.PyArray_DATA(<cnp.ndarray>bits_out) if s.do_filter else NULL
    cdef i64* fs = <i64*>cnp.PyArray_DATA(<cnp.ndarray>fit_out) if s.do_fit else NULL
    cdef i64* bs = <i64*>cnp.PyArray_DATA(<cnp.ndarray>bal_out) if s.do_bal else NULL
    cdef u8* ps = <u8*>cnp.PyArray_DATA(<cnp.ndarray>pass_out)
    cdef Py_ssize_t n_fail = 0
    cdef bint fit_ok = True, bal_ok = True
    cdef ks_best best
    ks_best_init(&best)
    if n < NOGIL_ROWS:
        _fused_rows(n, pa, ra, pr, rr, pz, pal, pco, pv, &s, wf, wb, bits, fs, bs, ps, &n_fail, &fit_ok,
                    &bal_ok, &best)
    else:
        with nogil:
            _fused_rows(n, pa, ra, pr, rr, pz, pal, pco, pv, &s, wf, wb, bits, fs, bs, ps, &n_fail, &fit_ok,
                        &bal_ok, &best)
    return (bits_out, fit_out, bool(fit_ok), bal_out, bool(bal_ok), n_fail,
            pass_out, best.n_pass, best.top, best.ties, best.first, best.last)


def nth_best_row(fit, i64 wf, bal, i64 wb, passed, i64 best, Py_ssize_t k, Py_ssize_t start):
    """Row of the ``k``-th (from 0) passing row at or after ``start`` whose ``wf*fit + wb*bal``
    equals ``best`` (``fit``/``bal`` may be None: that part counts 0); -1 if there is none.

    The second, rare half of the fused selection: needed only when the random pick falls strictly
    between the first and last tying rows that ``fused_pass`` reported.
    """
    if not cnp.PyArray_Check(passed) or cnp.PyArray_TYPE(<cnp.ndarray>passed) != cnp.NPY_BOOL:
        raise ValueError("passed must be a bool array")
    cdef cnp.ndarray pa = <cnp.ndarray>passed
    if pa.ndim != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(pa):
        raise ValueError("passed must be a C-contiguous 1-d array")
    cdef Py_ssize_t n = pa.shape[0]
    cdef const i64* pf = NULL
    cdef const i64* pb = NULL
    if fit is not None:
        pf = _table(fit, 1, n, 0, "fit")
    if bal is not None:
        pb = _table(bal, 1, n, 0, "bal")
    cdef const u8* pp = <const u8*>cnp.PyArray_DATA(pa)
    cdef Py_ssize_t found
    if start < 0:
        start = 0
    if n - start < NOGIL_ROWS:
        return _nth_best(pf, wf, pb, wb, pp, best, k, start, n)
    with nogil:
        found = _nth_best(pf, wf, pb, wb, pp, best, k, start, n)
    return found


cdef Py_ssize_t _nth_best(const i64* pf, i64 wf, const i64* pb, i64 wb, const u8* pp, i64 best, Py_ssize_t k,
                          Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef i64 v
    for i in range(start, n):
        if not pp[i]:
            continue
        v = wadd(wmul(pf[i], wf) if pf != NULL else 0, wmul(pb[i], wb) if pb != NULL else 0)
        if v == best:
            if k == 0:
                return i
            k -= 1
    return -1


# --------------------------------------------------------------------------- the runtime's passes
def drop_failed(feasible, failed, Py_ssize_t n):
    """``feasible[:n] &= failed[:n] == 0`` in place; returns how many rows stay feasible.

    One pass and no temporaries instead of numpy's compare, AND and ``count_nonzero``.
    """
    if not cnp.PyArray_Check(feasible) or cnp.PyArray_TYPE(<cnp.ndarray>feasible) != cnp.NPY_BOOL:
        raise ValueError("feasible must be a bool array")
    if not cnp.PyArray_Check(failed) or cnp.PyArray_TYPE(<cnp.ndarray>failed) != cnp.NPY_UINT64:
        raise ValueError("failed must be a uint64 array")
    cdef cnp.ndarray fe = <cnp.ndarray>feasible
    cdef cnp.ndarray fa = <cnp.ndarray>failed
    if (fe.ndim != 1 or fa.ndim != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(fe)
            or not cnp.PyArray_IS_C_CONTIGUOUS(fa) or not cnp.PyArray_ISWRITEABLE(fe)):
        raise ValueError("feasible and failed must be writeable/C-contiguous 1-d arrays")
    if fe.shape[0] < n or fa.shape[0] < n:
        raise ValueError(f"feasible ({fe.shape[0]}) or failed ({fa.shape[0]}) has fewer than {n} rows")
    cdef u8* pf = <u8*>cnp.PyArray_DATA(fe)
    cdef const u64* pb = <const u64*>cnp.PyArray_DATA(fa)
    cdef Py_ssize_t left
    if n < NOGIL_ROWS:
        return _drop_failed_rows(pf, pb, n)
    with nogil:
        left = _drop_failed_rows(pf, pb, n)
    return left


cdef Py_ssize_t _drop_failed_rows(u8* pf, const u64* pb, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, left = 0
    for i in range(n):
        pf[i] = pf[i] & (pb[i] == 0)
        left += pf[i]
    return left


def drop_rows(feasible, rows, fit, i64 wf, bal, i64 wb, i64 best, Py_ssize_t first, Py_ssize_t last):
    """``feasible`` without ``rows`` and what that does to a best-row hint: ``(out, tied)``.

    ``out`` is a copy of ``feasible`` with ``rows`` cleared, None when none of them was feasible
    (then ``tied`` is 0). ``tied`` counts the dropped rows whose ``wf*fit + wb*bal`` equals
    ``best`` (``fit``/``bal`` may be None: that part counts 0; both None: 0), or is -1 when
    ``first`` or ``last`` is among those. The nominated-pods pass drops a few rows per cycle; this
    is one call instead of a dozen numpy operations on tiny arrays. Reference:
    ``ksched.framework.kernels.drop_rows_ref``.
    """
    if not cnp.PyArray_Check(feasible) or cnp.PyArray_TYPE(<cnp.ndarray>feasible) != cnp.NPY_BOOL:
        raise ValueError("feasible must be a bool array")
    if not cnp.PyArray_Check(rows) or cnp.PyArray_TYPE(<cnp.ndarray>rows) != cnp.NPY_INTP:
        raise ValueError("rows must be an intp array")
    cdef cnp.ndarray fe = <cnp.ndarray>feasible
    cdef cnp.ndarray ro = <cnp.ndarray>rows
    if fe.ndim != 1 or ro.ndim != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(fe) or not cnp.PyArray_IS_C_CONTIGUOUS(ro):
        raise ValueError("feasible and rows must be C-contiguous 1-d arrays")
    cdef Py_ssize_t n = fe.shape[0], m = ro.shape[0], j, r, lost = 0, tied = 0
    cdef const u8* pf = <const u8*>cnp.PyArray_DATA(fe)
    cdef const Py_ssize_t* pr = <const Py_ssize_t*>cnp.PyArray_DATA(ro)
    for j in range(m):
        r = pr[j]
        if r < 0 or r >= n:
            raise IndexError(f"row {r} outside the {n} rows of feasible")
        lost += pf[r] != 0
    if lost == 0:
        return None, 0
    cdef const i64* pfit = NULL
    cdef const i64* pbal = NULL
    if fit is not None:
        pfit = _table(fit, 1, n, 0, "fit")
    if bal is not None:
        pbal = _table(bal, 1, n, 0, "bal")
    out = cnp.PyArray_NewCopy(fe, cnp.NPY_CORDER)
    cdef u8* po = <u8*>cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef bint edge = False
    cdef bint scored = pfit != NULL or pbal != NULL
    cdef i64 v
    for j in range(m):
        r = pr[j]
        if not pf[r]:
            continue
        po[r] = 0
        if scored:
            v = wadd(wmul(pfit[r], wf) if pfit != NULL else 0, wmul(pbal[r], wb) if pbal != NULL else 0)
            if v == best:
                tied += 1
                edge = edge or r == first or r == last
    return out, (-1 if edge else tied)


def select_best(const i64[::1] total, const u8[::1] feasible, double u):
    """Row of the best feasible total, ties broken by ``u`` in [0, 1) exactly like ``select_best_ref``."""
    cdef Py_ssize_t r, n = feasible.shape[0]
    if n > total.shape[0]:
        raise ValueError(f"feasible has {n} rows, total only {total.shape[0]}")
    if n == 0:
        return -1
    cdef const i64* pt = &total[0]
    cdef const u8* pf = &feasible[0]
    if n < NOGIL_ROWS:
        return select_best_rows(pt, pf, n, u)
    with nogil:
        r = select_best_rows(pt, pf, n, u)
    return r


def simd_levels():
    """The vector levels this CPU runs, from ``SIMD_LEVELS``: ``("none",)``, then ``"avx2"``."""
    return SIMD_LEVELS[: _simd_max + 1]


def sweeps():
    """The default shape's sweeps this CPU runs, from ``SWEEPS``: ``"generic"``, then
    ``simd_levels()``."""
    return SWEEPS[: _simd_max + 2]


def simd_level():
    """The sweep in use (the best the CPU runs unless ``set_simd`` chose another)."""
    return SWEEPS[_simd_use + 1]


def set_simd(str level):
    """Use the given sweep for the default shape (one of ``sweeps()``); returns the previous one.
    For tests and benchmarks that compare the paths; every sweep gives the same results."""
    global _simd_use
    if level not in sweeps():
        raise ValueError(f"sweep {level!r} is not available on this CPU; it runs {sweeps()}")
    previous = SWEEPS[_simd_use + 1]
    _simd_use = SWEEPS.index(level) - 1
    return previous


def constants():
    """``{name: value}`` of the codes in ``kernels.pxd`` that the Python side shares;
    ``ksched.framework.kernels`` compares them with its own when it loads this module."""
    return {
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


def typedefs():
    """``{name: (itemsize, signed)}`` of the ctypedefs in ``_types.pxd``, for the dtype-pinning test."""
    return {
        "i64": (sizeof(i64), <i64>-1 < 0),
        "u64": (sizeof(u64), <u64>-1 < 0),
        "u8": (sizeof(u8), <u8>-1 < 0),
        "f64": (sizeof(f64), True),
    }
