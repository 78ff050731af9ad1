"""Compiled resource kernels equal their numpy references exactly, on random node tables.

Integers compare exactly; BalancedAllocation's floats are computed in the same operation order
on both sides, so its scores compare exactly too. Tables include extended-resource columns,
zero allocatable, allocatable up to ~2^62 (where Go's int64 products wrap: both sides wrap the
same way), empty nodes and pods without requests. Skipped only when the extension is not built.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.framework import kernels
from ksched.framework.plugins.noderesources import scoring

FAST: ModuleType | None = kernels.compiled()
pytestmark = pytest.mark.skipif(
    FAST is None, reason="ksched._fast is not built (python setup.py build_ext --inplace)"
)
SETTINGS = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
I64 = np.int64
_EMPTY = np.zeros(0, dtype=np.int64)


def _magnitude(rng: np.random.Generator, size: Any, huge: bool) -> np.ndarray:
    """Quantities from 0 to ~2^62 (when ``huge``), biased towards small values and zeros."""
    top = 62 if huge else 20
    exps = rng.integers(0, top + 1, size=size)
    vals = rng.integers(0, 2**62, size=size, dtype=I64) >> (62 - exps)
    vals[rng.random(size) < 0.15] = 0
    return vals.astype(I64)


@st.composite
def tables(draw: st.DrawFn) -> dict[str, Any]:
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(0, 40))
    width = draw(st.integers(3, 8))
    huge = draw(st.booleans())
    k = draw(st.integers(0, width + 1))
    m = draw(st.integers(1, 5))
    return _table(seed, n, width, huge, k, m, draw(st.sampled_from([0, 1, 2])))


def _table(seed: int, n: int, width: int, huge: bool, k: int, m: int, strategy: int) -> dict[str, Any]:
    """A random node table of ``n`` rows and ``width`` resources, with a pod spec of ``k`` resources
    and a scoring shape of ``m`` points."""
    rng = np.random.default_rng(seed)
    alloc = _magnitude(rng, (n, width), huge)
    req = np.minimum(_magnitude(rng, (n, width), huge), np.where(rng.random((n, width)) < 0.8, alloc, 2**62))
    nz = np.maximum(req[:, :2], rng.integers(0, 3, size=(n, 2)) * 100)
    allowed = rng.integers(0, 12, size=n).astype(I64)
    count = rng.integers(0, 12, size=n).astype(I64)
    cols = rng.integers(-1, width, size=k).astype(I64)
    pod = np.maximum(_magnitude(rng, k, huge), 1)
    src = rng.integers(0, 3, size=k).astype(I64)
    w = rng.integers(1, 101, size=k).astype(I64)
    shape_u = np.sort(rng.choice(101, size=m, replace=False)).astype(I64)
    shape_s = (rng.integers(0, 11, size=m) * 10).astype(I64)
    score_cols = np.where(cols < 0, 0, cols)
    return {
        "alloc": np.ascontiguousarray(alloc),
        "req": np.ascontiguousarray(req),
        "nz": np.ascontiguousarray(nz),
        "allowed": allowed,
        "count": count,
        "fcols": cols,
        "fpod": pod,
        "scols": score_cols,
        "ssrc": src,
        "spod": np.where(rng.random(k) < 0.2, 0, pod).astype(I64),
        "sw": w,
        "shape_u": shape_u,
        "shape_s": shape_s,
        "strategy": strategy,
    }


@SETTINGS
@given(tables())
def test_fit_filter(t: dict[str, Any]) -> None:
    _check_fit_filter(t)


def _check_fit_filter(t: dict[str, Any]) -> None:
    assert FAST is not None
    want = scoring.fit_filter_ref(t["alloc"], t["req"], t["allowed"], t["count"], t["fcols"], t["fpod"])
    got = FAST.fit_filter(t["alloc"], t["req"], t["allowed"], t["count"], t["fcols"], t["fpod"])
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(tables())
def test_resource_score(t: dict[str, Any]) -> None:
    _check_resource_score(t)


def _check_resource_score(t: dict[str, Any]) -> None:
    assert FAST is not None
    args = (
        t["alloc"],
        t["req"],
        t["nz"],
        t["scols"],
        t["ssrc"],
        t["spod"],
        t["sw"],
        t["strategy"],
        t["shape_u"],
        t["shape_s"],
    )
    want, want_ok = scoring.resource_score_ref(*args)
    got, got_ok = FAST.resource_score(*args)
    np.testing.assert_array_equal(got, want)
    assert got_ok == want_ok


@SETTINGS
@given(tables())
def test_balanced_score(t: dict[str, Any]) -> None:
    _check_balanced_score(t)


def _check_balanced_score(t: dict[str, Any]) -> None:
    assert FAST is not None
    want, want_ok = scoring.balanced_score_ref(t["alloc"], t["req"], t["scols"], t["spod"])
    got, got_ok = FAST.balanced_score(t["alloc"], t["req"], t["scols"], t["spod"])
    np.testing.assert_array_equal(got, want)
    assert got_ok == want_ok


def _assert_same(got: kernels.FusedPass, want: kernels.FusedPass) -> None:
    assert isinstance(got, kernels.FusedPass) and isinstance(want, kernels.FusedPass)
    for name, g, w in zip(kernels.FusedPass._fields, got, want, strict=True):
        if isinstance(w, np.ndarray):
            assert isinstance(g, np.ndarray), name
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            assert g == w, name


def _compiled(*args: Any) -> kernels.FusedPass:
    assert FAST is not None
    return kernels.FusedPass._make(FAST.fused_pass(*args))


def _fused_pass(t: dict[str, Any], spec: np.ndarray, spare: int, seed: int) -> None:
    """``fused_pass`` == ``fused_pass_ref`` (pass mask, counts and best rows included), with random
    valid rows and weights, on the table padded with ``spare`` unused rows (as the node table's
    capacity is): both read only rows ``[0, n)`` of the whole arrays."""
    assert FAST is not None
    n = t["alloc"].shape[0]
    rng = np.random.default_rng(seed)

    def pad(a: np.ndarray) -> np.ndarray:
        out = np.full((n + spare, *a.shape[1:]), 7, dtype=a.dtype)
        out[:n] = a
        return out

    table = [pad(t[k]) for k in ("alloc", "req", "nz", "allowed", "count")]
    valid = np.ones(n + spare, dtype=np.bool_)
    valid[:n] = rng.random(n) < rng.random()
    wf, wb = (int(w) for w in rng.choice([0, 1, 2, 3, 7, 2**40, 2**62], size=2))
    want = scoring.fused_pass_ref(*table, valid, n, spec, wf, wb)
    got = _compiled(*table, valid, n, spec, wf, wb)
    _assert_same(got, want)
    assert got.failing_rows == (int(np.count_nonzero(got.bits)) if got.bits is not None else 0)
    fit, bal, passed, best = got.fit, got.balanced, got.passed, got.best
    arrays = tuple(a for a in (fit, bal) if a is not None)
    weights = tuple(w for a, w in ((fit, wf), (bal, wb)) if a is not None)
    for k in range(got.ties):  # every tie is found by both nth_best_row implementations
        want_row = kernels.nth_best_row_ref(arrays, weights, passed, best, k, 0)
        assert want_row >= 0
        assert FAST.nth_best_row(fit, wf if fit is not None else 0, bal, wb if bal is not None else 0,
                                 passed, best, k, 0) == want_row  # fmt: skip
        assert kernels.nth_best_row(arrays, weights, passed, best, k, 0) == want_row
    _drop_rows(passed, arrays, weights, best, got.first, got.last, got.ties, rng)


def _drop_rows(
    passed: np.ndarray,
    arrays: tuple[np.ndarray, ...],
    weights: tuple[int, ...],
    best: int,
    first: int,
    last: int,
    ties: int,
    rng: np.random.Generator,
) -> None:
    """``drop_rows`` (compiled) == ``drop_rows_ref``: a few random rows, sometimes the first or the
    last tie, taken off the pass mask, with the sweep's score arrays and without any."""
    m = passed.shape[0]
    picked = rng.integers(0, m, size=int(rng.integers(0, 6))) if m else np.zeros(0, dtype=np.intp)
    if ties and rng.random() < 0.3:
        picked = np.append(picked, rng.choice([first, last]))
    rows = np.unique(picked).astype(np.intp)
    for arrs, wts in ((arrays, weights), ((), ())):
        want_out, want_tied = kernels.drop_rows_ref(passed, rows, arrs, wts, best, first, last)
        got_out, got_tied = kernels.drop_rows(passed, rows, arrs, wts, best, first, last)
        assert got_tied == want_tied
        assert (got_out is None) == (want_out is None)
        if want_out is not None:
            assert got_out is not None and np.array_equal(got_out, want_out)


@SETTINGS
@given(tables(), st.booleans(), st.booleans(), st.booleans(), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_fused_pass(
    t: dict[str, Any], do_filter: bool, do_fit: bool, do_bal: bool, spare: int, seed: int
) -> None:
    """Any spec: the generic sweep (``_sweep`` and ``_pass_best``)."""
    spec = scoring.pack_spec(
        do_filter, t["fcols"][:31], t["fpod"][:31],
        do_fit, t["scols"], t["ssrc"], t["spod"], t["sw"], t["strategy"], t["shape_u"], t["shape_s"],
        do_bal, t["scols"], t["spod"],
    )  # fmt: skip
    _fused_pass(t, spec, spare, seed)


@pytest.mark.parametrize("seed", [1, 2])
def test_sweeps_long_enough_to_release_the_gil_agree_too(seed: int) -> None:
    """The kernels release the GIL only from GIL_KEPT_BELOW_ROWS rows on: that path, on tables of
    that many rows (the random tables above are small), gives the references' answers as well."""
    assert FAST is not None
    n = FAST.GIL_KEPT_BELOW_ROWS + 3
    t = _table(seed, n, 4, seed == 2, 3, 3, seed % 3)
    _check_fit_filter(t)
    _check_resource_score(t)
    _check_balanced_score(t)
    spec = scoring.pack_spec(
        True, t["fcols"], t["fpod"], True, t["scols"], t["ssrc"], t["spod"], t["sw"], t["strategy"],
        t["shape_u"], t["shape_s"], True, t["scols"], t["spod"],
    )  # fmt: skip
    _fused_pass(t, spec, 2, seed)
    cols = np.array([0, 1], dtype=I64)
    src = np.array([kernels.SRC_NONZERO_CPU, kernels.SRC_NONZERO_MEMORY], dtype=I64)
    pod, w = np.array([100, 2**20], dtype=I64), np.array([1, 1], dtype=I64)
    default = scoring.pack_spec(
        True, cols, pod, True, cols, src, pod, w, scoring.LEAST_ALLOCATED, t["shape_u"], t["shape_s"],
        True, cols, pod,
    )  # fmt: skip
    _fused_pass(t, default, 0, seed)
    _check_drop_failed(seed, n, 1)
    _check_select_best(seed, n, 0.37)


@SETTINGS
@given(tables(), st.integers(0, 3), st.integers(0, 2**32 - 1), st.booleans())
def test_fused_pass_default_shape(t: dict[str, Any], spare: int, seed: int, nonzero_src: bool) -> None:
    """The default profile's shape (cpu and memory, LeastAllocated, both parts) on the same random
    tables (zero and huge allocatable, wrapping products, requests beyond allocatable): through the
    specialized sweep, and with ``src`` SRC_REQUESTED (not that shape) through the generic one.
    ``test_kernels_simd.py`` runs the specialized sweep at every SIMD level."""
    pod = t["fpod"][:2] if t["fpod"].shape[0] >= 2 else np.array([1000, 2**31], dtype=I64)
    cols = np.array([0, 1], dtype=I64)
    nonzero = [kernels.SRC_NONZERO_CPU, kernels.SRC_NONZERO_MEMORY]
    src = np.array(nonzero if nonzero_src else [kernels.SRC_REQUESTED] * 2, dtype=I64)
    w = t["sw"][:2] if t["sw"].shape[0] >= 2 else np.array([1, 1], dtype=I64)
    spec = scoring.pack_spec(
        True, cols, pod, True, cols, src, pod, w, scoring.LEAST_ALLOCATED, t["shape_u"], t["shape_s"],
        True, cols, pod,
    )  # fmt: skip
    _fused_pass(t, spec, spare, seed)


def test_fused_pass_rejects_bad_input() -> None:
    assert FAST is not None
    alloc = np.zeros((3, 4), dtype=I64)
    one = np.array([1], dtype=I64)
    ok = scoring.pack_spec(True, np.array([0], dtype=I64), one, False, *([_EMPTY] * 4), 0,
                           _EMPTY, _EMPTY, False, _EMPTY, _EMPTY)  # fmt: skip
    rows = (alloc, alloc, np.zeros((3, 2), dtype=I64), np.zeros(3, dtype=I64), np.zeros(3, dtype=I64))
    valid = np.ones(3, dtype=np.bool_)
    FAST.fused_pass(*rows, valid, 3, ok, 1, 1)
    with pytest.raises(ValueError, match="rows"):
        FAST.fused_pass(*rows, valid, 4, ok, 1, 1)
    with pytest.raises(ValueError, match="int64"):
        FAST.fused_pass(alloc.astype(np.int32), *rows[1:], valid, 3, ok, 1, 1)
    with pytest.raises(ValueError, match="bool"):
        FAST.fused_pass(*rows, valid.view(np.uint8), 3, ok, 1, 1)
    with pytest.raises(TypeError, match="valid"):
        FAST.fused_pass(*rows, None, 3, ok, 1, 1)
    with pytest.raises(ValueError, match="header"):
        FAST.fused_pass(*rows, valid, 3, ok[:-1].copy(), 1, 1)
    bad_col = scoring.pack_spec(True, np.array([4], dtype=I64), np.array([1], dtype=I64), False,
                                *([_EMPTY] * 4), 0, _EMPTY, _EMPTY, False, _EMPTY, _EMPTY)  # fmt: skip
    with pytest.raises(ValueError, match="column"):
        FAST.fused_pass(*rows, valid, 3, bad_col, 1, 1)
    zero = np.array([0], dtype=I64)
    bad_strategy = scoring.pack_spec(False, _EMPTY, _EMPTY, True, zero, zero, one, one, 7,
                                     _EMPTY, _EMPTY, False, _EMPTY, _EMPTY)  # fmt: skip
    with pytest.raises(ValueError, match="strategy"):
        FAST.fused_pass(*rows, valid, 3, bad_strategy, 1, 1)


def test_fused_pass_wrapper_names_both_paths() -> None:
    """``kernels.fused_pass`` returns a :class:`kernels.FusedPass` from the compiled kernel and from
    the reference alike, with the same values."""
    n = 5
    alloc = np.tile(np.array([4000, 2**33], dtype=I64), (n, 1))
    req = np.zeros((n, 2), dtype=I64)
    nz = np.full((n, 2), 100, dtype=I64)
    cols = np.array([0, 1], dtype=I64)
    src = np.array([kernels.SRC_NONZERO_CPU, kernels.SRC_NONZERO_MEMORY], dtype=I64)
    pod = np.array([500, 2**30], dtype=I64)
    w = np.array([1, 1], dtype=I64)
    spec = scoring.pack_spec(True, cols, pod, True, cols, src, pod, w, scoring.LEAST_ALLOCATED,
                             _EMPTY, _EMPTY, True, cols, pod)  # fmt: skip
    args = (alloc, req, nz, np.full(n, 110, dtype=I64), np.zeros(n, dtype=I64), np.ones(n, dtype=np.bool_))
    compiled = kernels.fused_pass(*args, n, spec, 1, 1, reference=scoring.fused_pass_ref)
    try:
        kernels.use_compiled(False)
        reference = kernels.fused_pass(*args, n, spec, 1, 1, reference=scoring.fused_pass_ref)
    finally:
        kernels.use_compiled(True)
    _assert_same(compiled, reference)
    assert (compiled.n_passed, compiled.ties, compiled.first, compiled.last) == (n, n, 0, n - 1)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(0, 60), st.integers(0, 3))
def test_drop_failed(seed: int, n: int, spare: int) -> None:
    _check_drop_failed(seed, n, spare)


def _check_drop_failed(seed: int, n: int, spare: int) -> None:
    assert FAST is not None
    rng = np.random.default_rng(seed)
    feasible = rng.random(n + spare) < rng.random()
    failed = np.where(rng.random(n + spare) < rng.random(), rng.integers(1, 2**63, size=n + spare), 0)
    failed = failed.astype(np.uint64)
    want = feasible.copy()
    want_count = kernels.drop_failed_ref(want, failed, n)
    got = feasible.copy()
    assert FAST.drop_failed(got, failed, n) == want_count
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(0, 60), st.floats(0.0, 1.0, exclude_max=True))
def test_select_best(seed: int, n: int, u: float) -> None:
    _check_select_best(seed, n, u)


def _check_select_best(seed: int, n: int, u: float) -> None:
    assert FAST is not None
    rng = np.random.default_rng(seed)
    total = rng.integers(-3, 4, size=n).astype(I64) * rng.integers(1, 2**40)
    feasible = rng.random(n) < rng.random()
    assert FAST.select_best(total, feasible.view(np.uint8), u) == kernels.select_best_ref(total, feasible, u)


@pytest.mark.parametrize("valid_rows", [[0, 1, 2, 3], [1, 3], [2]])
def test_fused_pass_best_wraps_to_int64_min(valid_rows: list[int]) -> None:
    """Every passing row's weighted sum wraps to exactly INT64_MIN (score 2 times 2**62): the
    one-pass maximum never rises above its start value, and must still report the first tie."""
    assert FAST is not None
    n = 4
    alloc = np.zeros((n, 2), dtype=I64)
    alloc[:] = 100
    req = np.zeros((n, 2), dtype=I64)
    nz = np.full((n, 2), 97, dtype=I64)  # (100 - 98) * 100 / 100 = 2 for a pod adding 1
    allowed = np.full(n, 10, dtype=I64)
    count = np.zeros(n, dtype=I64)
    valid = np.zeros(n, dtype=np.bool_)
    valid[valid_rows] = True
    cols = np.array([0, 1], dtype=I64)
    src = np.array([1, 2], dtype=I64)
    pod = np.array([1, 1], dtype=I64)
    w = np.array([1, 1], dtype=I64)
    empty = np.zeros(0, dtype=I64)
    spec = scoring.pack_spec(
        True, cols, pod, True, cols, src, pod, w, scoring.LEAST_ALLOCATED, empty, empty, False, empty, empty
    )
    table = (alloc, req, nz, allowed, count)
    want = scoring.fused_pass_ref(*table, valid, n, spec, 2**62, 0)
    got = _compiled(*table, valid, n, spec, 2**62, 0)
    _assert_same(got, want)
    assert got.best == np.iinfo(np.int64).min
    assert (got.ties, got.first, got.last) == (len(valid_rows), valid_rows[0], valid_rows[-1])
