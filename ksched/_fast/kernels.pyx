"""Resource kernels over node-table rows, and the final node selection.

Each ``cdef ... noexcept nogil`` function (contract and arithmetic rules in ``kernels.pxd``) has a
``def`` wrapper that checks shapes once, allocates the outputs, releases the GIL and loops. The
numpy references they must agree with exactly live in
``ksched.framework.plugins.noderesources.scoring`` (resource kernels) and
``ksched.framework.kernels.select_best_ref``; the property tests compare them on random clusters.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport fabs, round, sqrt

from ksched._fast._types cimport f64, i64, u8, u64

cnp.import_array()

cdef i64 MAX_NODE_SCORE = 100
cdef i64 MAX_UTILIZATION = 100


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
    return node_score / weight_sum


cdef inline f64 fraction(const i64* alloc, const i64* req, i64 col, i64 pod) noexcept nogil:
    cdef f64 f = <f64>wadd(cell(req, col), pod) / <f64>cell(alloc, col)
    return 1.0 if f > 1.0 else f


cdef i64 balanced_score_row(const i64* alloc, const i64* req, const i64* cols, const i64* pod,
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
    cdef Py_ssize_t n = alloc.shape[0], row, ra = alloc.shape[1], rr = req.shape[1], k = cols.shape[0]
    _check_rows("requested", req.shape[0], n)
    _check_rows("allowed_pods", allowed.shape[0], n)
    _check_rows("pod_count", count.shape[0], n)
    _check_spec((cols,), pod.shape[0])
    _check_cols(cols, min(ra, rr), True)
    if k > 31:
        raise ValueError("at most 31 resources fit in the 64 failure bits")
    out = np.empty(n, dtype=np.uint64)
    cdef u64[::1] bits = out
    cdef const i64* pa = p2(alloc)
    cdef const i64* pr = p2(req)
    cdef const i64* pc = p1(cols)
    cdef const i64* pp = p1(pod)
    with nogil:
        for row in range(n):
            bits[row] = fit_bits_row(pa + row * ra, pr + row * rr, allowed[row], count[row], pc, pp, k)
    return out


def resource_score(const i64[:, ::1] alloc, const i64[:, ::1] req, const i64[:, ::1] nz,
                   const i64[::1] cols, const i64[::1] src, const i64[::1] pod, const i64[::1] w,
                   int strategy, const i64[::1] shape_u, const i64[::1] shape_s):
    """NodeResourcesFit scores of every row; returns ``(scores, all scores within 0..100)``."""
    cdef Py_ssize_t n = alloc.shape[0], row, ra = alloc.shape[1], rr = req.shape[1], k = cols.shape[0]
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
    with nogil:
        for row in range(n):
            s[row] = resource_score_row(pa + row * ra, pr + row * rr, pz + row * 2, pc, ps, pp, pw, k, strategy,
                                        pu, pv, m)
            if s[row] < 0 or s[row] > MAX_NODE_SCORE:
                in_range = False
    return out, bool(in_range)


def balanced_score(const i64[:, ::1] alloc, const i64[:, ::1] req, const i64[::1] cols,
                   const i64[::1] pod):
    """NodeResourcesBalancedAllocation scores of every row; ``(scores, all within 0..100)``."""
    cdef Py_ssize_t n = alloc.shape[0], row, ra = alloc.shape[1], rr = req.shape[1], k = cols.shape[0]
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
    with nogil:
        for row in range(n):
            s[row] = balanced_score_row(pa + row * ra, pr + row * rr, pc, pp, k)
            if s[row] < 0 or s[row] > MAX_NODE_SCORE:
                in_range = False
    return out, bool(in_range)


def fused_resources(const i64[:, ::1] alloc, const i64[:, ::1] req, const i64[:, ::1] nz,
                    const i64[::1] allowed, const i64[::1] count,
                    bint do_filter, const i64[::1] fcols, const i64[::1] fpod,
                    bint do_fit, const i64[::1] scols, const i64[::1] ssrc, const i64[::1] spod,
                    const i64[::1] sw, int strategy, const i64[::1] shape_u, const i64[::1] shape_s,
                    bint do_bal, const i64[::1] bcols, const i64[::1] bpod):
    """Fit bits, Fit score and BalancedAllocation score in one sweep over the rows.

    Returns ``(bits | None, fit | None, fit_in_range, balanced | None, balanced_in_range)``; a part
    that is not asked for (``do_*`` false) is None and its spec arrays are not read.
    """
    cdef Py_ssize_t n = alloc.shape[0], row, ra = alloc.shape[1], rr = req.shape[1]
    cdef Py_ssize_t kf = fcols.shape[0], ks = scols.shape[0], kb = bcols.shape[0], m = shape_u.shape[0]
    cdef bint fit_ok = True, bal_ok = True
    cdef i64 v
    _check_rows("requested", req.shape[0], n)
    _check_rows("nonzero_requested", nz.shape[0], n)
    _check_rows("allowed_pods", allowed.shape[0], n)
    _check_rows("pod_count", count.shape[0], n)
    _check_spec((fcols,), fpod.shape[0])
    _check_spec((scols, ssrc, spod), sw.shape[0])
    _check_spec((shape_u,), shape_s.shape[0])
    _check_spec((bcols,), bpod.shape[0])
    _check_cols(fcols, min(ra, rr), True)
    _check_cols(scols, min(ra, rr), True)
    _check_cols(bcols, min(ra, rr), True)
    if nz.shape[1] != 2:
        raise ValueError("nonzero_requested must have 2 columns")
    if do_filter and kf > 31:
        raise ValueError("at most 31 resources fit in the 64 failure bits")
    if do_fit and strategy == REQUESTED_TO_CAPACITY_RATIO and m == 0:
        raise ValueError("RequestedToCapacityRatio needs at least one shape point")
    bits_out = np.empty(n if do_filter else 0, dtype=np.uint64)
    fit_out = np.empty(n if do_fit else 0, dtype=np.int64)
    bal_out = np.empty(n if do_bal else 0, dtype=np.int64)
    cdef u64[::1] bits = bits_out
    cdef i64[::1] fs = fit_out
    cdef i64[::1] bs = bal_out
    cdef const i64* pa = p2(alloc)
    cdef const i64* pr = p2(req)
    cdef const i64* pz = p2(nz)
    cdef const i64* a_row
    cdef const i64* r_row
    cdef const i64* pfc = p1(fcols)
    cdef const i64* pfp = p1(fpod)
    cdef const i64* psc = p1(scols)
    cdef const i64* pss = p1(ssrc)
    cdef const i64* psp = p1(spod)
    cdef const i64* psw = p1(sw)
    cdef const i64* psu = p1(shape_u)
    cdef const i64* pst = p1(shape_s)
    cdef const i64* pbc = p1(bcols)
    cdef const i64* pbp = p1(bpod)
    with nogil:
        for row in range(n):
            a_row = pa + row * ra
            r_row = pr + row * rr
            if do_filter:
                bits[row] = fit_bits_row(a_row, r_row, allowed[row], count[row], pfc, pfp, kf)
            if do_fit:
                v = resource_score_row(a_row, r_row, pz + row * 2, psc, pss, psp, psw, ks, strategy, psu, pst, m)
                fs[row] = v
                if v < 0 or v > MAX_NODE_SCORE:
                    fit_ok = False
            if do_bal:
                v = balanced_score_row(a_row, r_row, pbc, pbp, kb)
                bs[row] = v
                if v < 0 or v > MAX_NODE_SCORE:
                    bal_ok = False
    return (
        bits_out if do_filter else None,
        fit_out if do_fit else None,
        bool(fit_ok),
        bal_out if do_bal else None,
        bool(bal_ok),
    )


def select_best(const i64[::1] total, const u8[::1] feasible, double u):
    """Row of the best feasible total, ties broken by ``u`` in [0, 1) exactly like ``select_best_ref``."""
    cdef Py_ssize_t r, n = feasible.shape[0]
    if n > total.shape[0]:
        raise ValueError(f"feasible has {n} rows, total only {total.shape[0]}")
    if n == 0:
        return -1
    cdef const i64* pt = &total[0]
    cdef const u8* pf = &feasible[0]
    with nogil:
        r = select_best_rows(pt, pf, n, u)
    return r


def typedefs():
    """``{name: (itemsize, signed)}`` of the ctypedefs in ``_types.pxd``, for the dtype-pinning test."""
    return {
        "i64": (sizeof(i64), <i64>-1 < 0),
        "u64": (sizeof(u64), <u64>-1 < 0),
        "u8": (sizeof(u8), <u8>-1 < 0),
        "f64": (sizeof(f64), True),
    }
