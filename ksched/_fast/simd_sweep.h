/* The default-shape fused sweep (kernels.pyx: _sweep_two + _pass_best) with AVX2 (four rows at a
 * time).
 *
 * Shape: the pod requests cpu and memory (node-table columns 0 and 1); NodeResourcesFit filters on
 * both and scores them LeastAllocated from the non-zero requests; BalancedAllocation uses both; the
 * fused pass also computes the pass mask and where wf*fit + wb*balanced peaks. The scalar loop in
 * kernels.pyx is the definition; this file must give bit-identical results, and the property tests
 * (tests/property/test_kernels_simd.py) compare both with the numpy references.
 *
 * Dispatch: ks_simd_level() asks the CPU (and OS) at run time (__builtin_cpu_supports), and only
 * the functions marked KS_AVX2 are compiled for that instruction set (target
 * attributes), so the extension builds with the baseline x86-64 flags and runs on any machine;
 * elsewhere (no AVX2, not x86-64, not GCC/Clang) only the scalar loop runs.
 *
 * Exactness. The scalar loop computes in Go int64 (wrapping) and IEEE double. Here:
 *
 *  - Filter bits and the pass mask are the same int64 compares and wrapping subtractions.
 *  - Every row handled here has allocatable, requested and non-zero requested of both resources in
 *    [0, 2^46) (KS_EXACT_BITS), checked per block of rows; a block that fails goes back to the
 *    caller, which runs the scalar loop on it. The pod's requests are in [0, 2^46), its Fit weights
 *    in [1, 2^20] and the score weights wf, wb in [0, 2^31), checked once (ks_two_pod_fits), else
 *    the caller runs the scalar loop on every row. So no integer sum below wraps, and every integer
 *    converted to double is below 2^52 and converts exactly (AVX2 has no int64 <-> double
 *    conversion and uses the 2^52 bit trick, exact in that range).
 *  - LeastAllocated, s = (a - r) * 100 / a (r = nz + pod, truncating; 0 if r > a; a resource with
 *    a = 0 drops out). With 0 <= r <= a < 2^46, N = (a - r) * 100 < 100 * 2^46 < 2^53, so N and a
 *    are exact doubles and the true quotient t = N / a lies in [0, 100]; N >= 0, so truncation is
 *    floor. IEEE division returns fl(t), the double nearest t, and floor(fl(t)) == floor(t): if t
 *    is an integer, fl(t) == t. Otherwise k = floor(t) <= 99 and t <= k + 1 - 1/a because N is an
 *    integer below (k + 1) * a; doubles just below k + 1 <= 100 < 128 are spaced at most 2^-46
 *    apart, and 1/a > 2^-46, so the double d = pred(k + 1) satisfies t < d; rounding is monotone,
 *    hence k = fl(k) <= fl(t) <= d < k + 1.
 *  - The weighted mean of the two scores, node_score / weight_sum (truncating, node_score >= 0):
 *    node_score <= 100 * 2^21 and weight_sum <= 2^21 are exact doubles and the same argument gives
 *    floor exactly. With equal weights (the default) it is floor((s0 + s1) / 2) or s0 or s1, done
 *    by multiplying with 0.5 or 1.0 (exact) instead of dividing.
 *  - BalancedAllocation is the same IEEE operations on the same (exactly converted) doubles in the
 *    same order: (req + pod) / a, capped at 1.0, |f0 - f1| / 2 (here * 0.5: the same real number,
 *    so the same rounding), 0 unless both a != 0, then (int64)((1.0 - std) * 100.0), which lies in
 *    [50, 100]. Were the compiler to contract a multiply and an add (FMA), the only such pair is
 *    the weighted mean's numerator s0 * w0 + s1 * w1, whose products and sum are integers below
 *    2^53, exact either way (no other product feeds an addition).
 *  - Scores are then in [0, 100], so wf * fit + wb * balanced < 2^39 is a plain 32x32 -> 64-bit
 *    product sum (vpmuludq) with no wrap, equal to the scalar loop's wrapping one.
 *
 * The best-row search keeps one running (top, ties, first, last) per lane. For any set of rows
 * that summary is canonical (the maximum over passing rows, how many reach it, the lowest and
 * highest of them; first stays -1 while the maximum is INT64_MIN, which the caller fixes up as the
 * scalar loop does), so lanes and the scalar loop's state merge in any order (ks_best_merge).
 */
#ifndef KSCHED_SIMD_SWEEP_H
#define KSCHED_SIMD_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KS_EXACT_BITS 46
#define KS_EXACT_LIMIT ((int64_t)1 << KS_EXACT_BITS)
#define KS_FIT_WEIGHT_LIMIT ((int64_t)1 << 20)
#define KS_SCORE_WEIGHT_LIMIT ((int64_t)1 << 31)

/* Running best-row summary over the rows seen so far (see above). n_pass counts passing rows. */
typedef struct {
    int64_t top;
    int64_t ties;
    int64_t first;
    int64_t last;
    int64_t n_pass;
} ks_best;

/* The pod's side of the default shape (kernels.pxd spec: fpod, spod, sw, bpod) and score weights. */
typedef struct {
    int64_t fp0, fp1, sp0, sp1, w0, w1, bp0, bp1, wf, wb;
} ks_two_pod;

static inline void ks_best_init(ks_best* b) {
    b->top = INT64_MIN;
    b->ties = 0;
    b->first = -1;
    b->last = -1;
    b->n_pass = 0;
}

/* Fold the summary (top, ties, first, last) of a disjoint set of rows into b (n_pass apart). */
static inline void ks_best_merge(ks_best* b, int64_t top, int64_t ties, int64_t first, int64_t last) {
    if (ties == 0)
        return; /* no passing row */
    if (b->ties == 0 || top > b->top) {
        b->top = top;
        b->ties = ties;
        b->first = first;
        b->last = last;
        return;
    }
    if (top < b->top)
        return;
    b->ties += ties;
    if (first >= 0 && (b->first < 0 || first < b->first))
        b->first = first;
    if (last > b->last)
        b->last = last;
}

static inline int ks_in(int64_t v, int64_t lo, int64_t hi_excl) { return v >= lo && v < hi_excl; }

/* Whether the pod's constants allow the vector path at all (exactness bounds above). */
static inline int ks_two_pod_fits(const ks_two_pod* p) {
    return ks_in(p->sp0, 0, KS_EXACT_LIMIT) && ks_in(p->sp1, 0, KS_EXACT_LIMIT)
        && ks_in(p->bp0, 0, KS_EXACT_LIMIT) && ks_in(p->bp1, 0, KS_EXACT_LIMIT)
        && ks_in(p->w0, 1, KS_FIT_WEIGHT_LIMIT + 1) && ks_in(p->w1, 1, KS_FIT_WEIGHT_LIMIT + 1)
        && ks_in(p->wf, 0, KS_SCORE_WEIGHT_LIMIT) && ks_in(p->wb, 0, KS_SCORE_WEIGHT_LIMIT);
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define KS_HAVE_X86 1
#include <immintrin.h>
#define KS_AVX2 __attribute__((target("avx2")))

/* The best vector sweep the CPU (and OS) runs: 1 AVX2, 0 none. */
static inline int ks_simd_level(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

/* Columns 0 and 1 of four rows of a row-major int64 table (row stride in elements). */
KS_AVX2 static inline void ks_load2(const int64_t* p, ptrdiff_t stride, __m256i* c0, __m256i* c1) {
    __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)p)),
                                         _mm_loadu_si128((const __m128i*)(p + 2 * stride)), 1);
    __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(p + stride))),
                                         _mm_loadu_si128((const __m128i*)(p + 3 * stride)), 1);
    *c0 = _mm256_unpacklo_epi64(lo, hi);
    *c1 = _mm256_unpackhi_epi64(lo, hi);
}

#define KS_TWO52 4503599627370496.0 /* 2^52 */

/* int64 -> double, exact for 0 <= x < 2^52. */
KS_AVX2 static inline __m256d ks_i2d(__m256i x) {
    const __m256d magic = _mm256_set1_pd(KS_TWO52);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x, _mm256_castpd_si256(magic))), magic);
}

/* double -> int64, exact for integer values 0 <= x < 2^52. */
KS_AVX2 static inline __m256i ks_d2i(__m256d x) {
    const __m256d magic = _mm256_set1_pd(KS_TWO52);
    return _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(x, magic)), _mm256_castpd_si256(magic));
}

/* Byte i = bit i of the index: a 4-bit row mask as four bool bytes. */
static const uint32_t ks_mask_bytes[16] = {
    0x00000000u, 0x00000001u, 0x00000100u, 0x00000101u, 0x00010000u, 0x00010001u, 0x00010100u, 0x00010101u,
    0x01000000u, 0x01000001u, 0x01000100u, 0x01000101u, 0x01010000u, 0x01010001u, 0x01010100u, 0x01010101u,
};

/* Rows [row, n) in blocks of four: bits, fs, bs and passed written, *n_fail and *best updated
 * (the n_pass and the lanes' summaries merged in on return).
 * Returns the first row not done: the start of the first block whose values leave [0, 2^46), or
 * the start of the last partial block (the caller runs the scalar loop from there).
 * Requires ks_two_pod_fits(pod). */
KS_AVX2 static inline ptrdiff_t ks_sweep_two_avx2(
    ptrdiff_t row, ptrdiff_t n, const int64_t* pa, ptrdiff_t ra, const int64_t* pr, ptrdiff_t rr,
    const int64_t* pz, const int64_t* pal, const int64_t* pco, const uint8_t* valid, const ks_two_pod* pod,
    uint64_t* bits, int64_t* fs, int64_t* bs, uint8_t* passed, int64_t* n_fail, ks_best* best) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i high = _mm256_set1_epi64x(~(KS_EXACT_LIMIT - 1)); /* sign bit and bits >= 46 */
    const __m256i fp0 = _mm256_set1_epi64x(pod->fp0), fp1 = _mm256_set1_epi64x(pod->fp1);
    const __m256i sp0 = _mm256_set1_epi64x(pod->sp0), sp1 = _mm256_set1_epi64x(pod->sp1);
    const __m256i bp0 = _mm256_set1_epi64x(pod->bp0), bp1 = _mm256_set1_epi64x(pod->bp1);
    const __m256i wf = _mm256_set1_epi64x(pod->wf), wb = _mm256_set1_epi64x(pod->wb);
    const __m256i short0 = _mm256_set1_epi64x(2), unres0 = _mm256_set1_epi64x(4);
    const __m256i short1 = _mm256_set1_epi64x(8), unres1 = _mm256_set1_epi64x(16);
    const __m256d hundred = _mm256_set1_pd(100.0), oned = _mm256_set1_pd(1.0), half = _mm256_set1_pd(0.5);
    const __m256d w0 = _mm256_set1_pd((double)pod->w0), w1 = _mm256_set1_pd((double)pod->w1);
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    const int same_weights = pod->w0 == pod->w1;
    const __m256i lowest = _mm256_set1_epi64x(INT64_MIN);
    __m256i top = lowest, ties = zero, first = _mm256_set1_epi64x(-1), last = first;
    __m256i idx = _mm256_add_epi64(_mm256_set1_epi64x(row), _mm256_setr_epi64x(0, 1, 2, 3));
    const __m256i four = _mm256_set1_epi64x(4);
    int64_t fails = 0, n_pass = 0;

    for (; row + 4 <= n; row += 4) {
        __m256i a0, a1, x0, x1, z0, z1;
        ks_load2(pa + row * ra, ra, &a0, &a1);
        ks_load2(pr + row * rr, rr, &x0, &x1);
        ks_load2(pz + row * 2, 2, &z0, &z1);
        __m256i any = _mm256_or_si256(_mm256_or_si256(_mm256_or_si256(a0, a1), _mm256_or_si256(x0, x1)),
                                      _mm256_or_si256(z0, z1));
        if (!_mm256_testz_si256(any, high))
            break;

        /* Fit filter: bit 0 too many pods; bit 1+2j / 2+2j short of resource j (unresolvable). */
        __m256i al = _mm256_loadu_si256((const __m256i*)(pal + row));
        __m256i co = _mm256_loadu_si256((const __m256i*)(pco + row));
        __m256i b = _mm256_and_si256(_mm256_cmpgt_epi64(_mm256_add_epi64(co, one), al), one);
        __m256i m = _mm256_cmpgt_epi64(fp0, _mm256_sub_epi64(a0, x0));
        b = _mm256_or_si256(b, _mm256_and_si256(m, _mm256_blendv_epi8(short0, unres0, _mm256_cmpgt_epi64(fp0, a0))));
        m = _mm256_cmpgt_epi64(fp1, _mm256_sub_epi64(a1, x1));
        b = _mm256_or_si256(b, _mm256_and_si256(m, _mm256_blendv_epi8(short1, unres1, _mm256_cmpgt_epi64(fp1, a1))));
        _mm256_storeu_si256((__m256i*)(bits + row), b);
        __m256i fits = _mm256_cmpeq_epi64(b, zero);

        /* LeastAllocated; a resource with allocatable 0 drops out (divide by 1 instead). */
        __m256i absent0 = _mm256_cmpeq_epi64(a0, zero), absent1 = _mm256_cmpeq_epi64(a1, zero);
        __m256d ad0 = ks_i2d(_mm256_or_si256(a0, _mm256_and_si256(absent0, one)));
        __m256d ad1 = ks_i2d(_mm256_or_si256(a1, _mm256_and_si256(absent1, one)));
        __m256i r0 = _mm256_add_epi64(z0, sp0), r1 = _mm256_add_epi64(z1, sp1);
        __m256i d0 = _mm256_andnot_si256(_mm256_cmpgt_epi64(r0, a0), _mm256_sub_epi64(a0, r0));
        __m256i d1 = _mm256_andnot_si256(_mm256_cmpgt_epi64(r1, a1), _mm256_sub_epi64(a1, r1));
        __m256d s0 = _mm256_floor_pd(_mm256_div_pd(_mm256_mul_pd(ks_i2d(d0), hundred), ad0));
        __m256d s1 = _mm256_floor_pd(_mm256_div_pd(_mm256_mul_pd(ks_i2d(d1), hundred), ad1));
        s0 = _mm256_andnot_pd(_mm256_castsi256_pd(absent0), s0);
        s1 = _mm256_andnot_pd(_mm256_castsi256_pd(absent1), s1);
        __m256d both = _mm256_castsi256_pd(_mm256_andnot_si256(_mm256_or_si256(absent0, absent1),
                                                               _mm256_set1_epi64x(-1)));
        __m256d vf;
        if (same_weights) {
            /* (w*s0 + w*s1) / (2w) or (w*s) / w: the weights cancel. */
            vf = _mm256_floor_pd(_mm256_mul_pd(_mm256_add_pd(s0, s1), _mm256_blendv_pd(oned, half, both)));
        } else {
            __m256d num = _mm256_add_pd(_mm256_mul_pd(s0, w0), _mm256_mul_pd(s1, w1));
            __m256d den = _mm256_add_pd(_mm256_andnot_pd(_mm256_castsi256_pd(absent0), w0),
                                        _mm256_andnot_pd(_mm256_castsi256_pd(absent1), w1));
            den = _mm256_blendv_pd(den, oned, _mm256_cmp_pd(den, _mm256_setzero_pd(), _CMP_EQ_OQ));
            vf = _mm256_floor_pd(_mm256_div_pd(num, den));
        }
        __m256i fsv = ks_d2i(vf);
        _mm256_storeu_si256((__m256i*)(fs + row), fsv);

        /* BalancedAllocation: capped fractions, |f0 - f1| / 2 when both resources are present. */
        __m256d f0 = _mm256_min_pd(_mm256_div_pd(ks_i2d(_mm256_add_epi64(x0, bp0)), ad0), oned);
        __m256d f1 = _mm256_min_pd(_mm256_div_pd(ks_i2d(_mm256_add_epi64(x1, bp1)), ad1), oned);
        __m256d sd = _mm256_and_pd(_mm256_and_pd(_mm256_mul_pd(_mm256_sub_pd(f0, f1), half), absmask), both);
        __m256i bsv = _mm256_cvtepi32_epi64(_mm256_cvttpd_epi32(_mm256_mul_pd(_mm256_sub_pd(oned, sd), hundred)));
        _mm256_storeu_si256((__m256i*)(bs + row), bsv);

        /* Pass mask and the running best per lane. */
        uint32_t vb;
        memcpy(&vb, valid + row, 4);
        __m256i vm = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128((int)vb));
        __m256i pm = _mm256_andnot_si256(_mm256_cmpeq_epi64(vm, zero), fits);
        int pbits = _mm256_movemask_pd(_mm256_castsi256_pd(pm));
        memcpy(passed + row, &ks_mask_bytes[pbits], 4);
        n_pass += __builtin_popcount((unsigned)pbits);
        fails += 4 - __builtin_popcount((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(fits)));
        __m256i v = _mm256_add_epi64(_mm256_mul_epu32(fsv, wf), _mm256_mul_epu32(bsv, wb));
        v = _mm256_blendv_epi8(lowest, v, pm);
        __m256i gt = _mm256_cmpgt_epi64(v, top);
        top = _mm256_blendv_epi8(top, v, gt);
        ties = _mm256_andnot_si256(gt, ties);
        first = _mm256_blendv_epi8(first, idx, gt);
        __m256i eq = _mm256_and_si256(_mm256_cmpeq_epi64(v, top), pm);
        ties = _mm256_sub_epi64(ties, eq);
        last = _mm256_blendv_epi8(last, idx, eq);
        idx = _mm256_add_epi64(idx, four);
    }

    int64_t t[4], c[4], f[4], l[4];
    _mm256_storeu_si256((__m256i*)t, top);
    _mm256_storeu_si256((__m256i*)c, ties);
    _mm256_storeu_si256((__m256i*)f, first);
    _mm256_storeu_si256((__m256i*)l, last);
    for (int i = 0; i < 4; i++)
        ks_best_merge(best, t[i], c[i], f[i], l[i]);
    best->n_pass += n_pass;
    *n_fail += fails;
    return row;
}

#else /* no x86-64 GCC/Clang: the scalar loop only */

static inline int ks_simd_level(void) { return 0; }

static inline ptrdiff_t ks_sweep_two_avx2(
    ptrdiff_t row, ptrdiff_t n, const int64_t* pa, ptrdiff_t ra, const int64_t* pr, ptrdiff_t rr,
    const int64_t* pz, const int64_t* pal, const int64_t* pco, const uint8_t* valid, const ks_two_pod* pod,
    uint64_t* bits, int64_t* fs, int64_t* bs, uint8_t* passed, int64_t* n_fail, ks_best* best) {
    (void)n; (void)pa; (void)ra; (void)pr; (void)rr; (void)pz; (void)pal; (void)pco; (void)valid;
    (void)pod; (void)bits; (void)fs; (void)bs; (void)passed; (void)n_fail; (void)best;
    return row;
}


#endif
#endif /* KSCHED_SIMD_SWEEP_H */
