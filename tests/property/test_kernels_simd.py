"""The default shape's sweeps (``kernels.pyx``, ``simd_sweep.h``) equal the numpy reference exactly.

``fused_pass`` runs cpu + memory, LeastAllocated and BalancedAllocation through AVX2 when the CPU
has it, for rows whose values lie in [0, 2^46) and pods whose requests and weights
are in range; other rows and pods take the hand-unrolled scalar loop. Every case here runs
through every sweep the CPU has (``FAST.sweeps()``: the generic loop, the unrolled one and the
vector one) and compares each with ``scoring.fused_pass_ref``; ``test_each_sweep_alone_on_the_edge_cases``
has a test id per sweep checked. Values are chosen at the edges: exactly
2^46 - 1 (vector) and 2^46 (scalar), negative and ~2^62 values, zero allocatable, requests above
allocatable, LeastAllocated quotients a hair below an integer (where a rounded division could
floor wrongly), weights at their limits, and row counts that leave partial blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
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
SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
I64 = np.int64
LIMIT = 2**46
"""``KS_EXACT_LIMIT``: row values in [0, LIMIT) take the vector path."""
COLS = np.array([0, 1], dtype=I64)
SRC = np.array([kernels.SRC_NONZERO_CPU, kernels.SRC_NONZERO_MEMORY], dtype=I64)
EMPTY = np.zeros(0, dtype=I64)

EDGE_VALUES = [0, 1, 2, 99, 100, 101, LIMIT - 2, LIMIT - 1, LIMIT, LIMIT + 1, 2**52, 2**62, -1, -(2**46)]
EDGES = len(EDGE_VALUES)
FIT_WEIGHTS = [(1, 1), (1, 1), (2, 2), (1, 3), (7, 2), (2**20, 1), (2**20 + 1, 1), (0, 1)]
"""Fit's per-resource weights: [1, 2^20] takes the vector path."""
SCORE_WEIGHTS = [(1, 1), (1, 1), (2, 5), (0, 1), (1, 0), (2**31 - 1, 2**31 - 1), (2**31, 1), (2**62, 3)]
"""The profile's score weights of Fit and BalancedAllocation: [0, 2^31) takes the vector path."""


@pytest.fixture(autouse=True)
def _restore_simd() -> Iterator[None]:
    assert FAST is not None
    previous = FAST.simd_level()
    yield
    FAST.set_simd(previous)


def _value(rng: np.random.Generator, size: Any, edge_rate: float) -> np.ndarray:
    """Mostly realistic quantities below 2^46 (often small), with a share of edge values."""
    exps = rng.integers(0, 47, size=size)
    vals = rng.integers(0, LIMIT, size=size, dtype=I64) >> (46 - exps)
    edges = np.array(EDGE_VALUES, dtype=I64)[rng.integers(0, len(EDGE_VALUES), size=size)]
    return np.where(rng.random(size) < edge_rate, edges, vals).astype(I64)


def _near_integer_nz(rng: np.random.Generator, alloc: np.ndarray, pod: int) -> np.ndarray:
    """Non-zero requests that put ``(a - r) * 100 / a`` just below, at or just above an integer
    (``r = nz + pod``): ``100 * (a - r) = k * a + {-1, 0, 1}`` wherever that has a solution."""
    k = rng.integers(0, 101, size=alloc.shape)
    target = k * alloc + rng.integers(-1, 2, size=alloc.shape)  # < 101 * 2^46, no overflow
    d = target // 100
    nz = alloc - d - pod
    return np.where(nz >= 0, nz, 0).astype(I64)


@st.composite
def default_tables(draw: st.DrawFn) -> dict[str, Any]:
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(0, 41))
    width = draw(st.integers(2, 8))
    edge_rate = draw(st.sampled_from([0.0, 0.02, 0.3]))
    rng = np.random.default_rng(seed)
    alloc = _value(rng, (n, width), edge_rate)
    alloc[rng.random((n, width)) < 0.05] = 0
    req = _value(rng, (n, width), edge_rate)
    req = np.where(rng.random((n, width)) < 0.85, np.minimum(req, np.maximum(alloc, 0)), req)
    fpod = np.maximum(_value(rng, 2, edge_rate / 2) >> rng.integers(0, 30, size=2), 1)
    spod = np.where(rng.random(2) < 0.1, np.array(EDGE_VALUES, dtype=I64)[rng.integers(0, EDGES, 2)], fpod)
    if draw(st.booleans()):
        nz = np.stack([_near_integer_nz(rng, alloc[:, j], int(spod[j])) for j in range(2)], axis=1)
    else:
        nz = np.maximum(req[:, :2], rng.integers(0, 3, size=(n, 2)) * 100)
    nz = nz.reshape(n, 2).astype(I64)
    w = np.array(draw(st.sampled_from(FIT_WEIGHTS)))
    wf, wb = draw(st.sampled_from(SCORE_WEIGHTS))
    bpod = np.where(rng.random(2) < 0.9, fpod, np.array(EDGE_VALUES, dtype=I64)[rng.integers(0, EDGES, 2)])
    valid = rng.random(n) < draw(st.sampled_from([1.0, 0.9, 0.3]))
    return {
        "alloc": alloc,
        "req": req,
        "nz": nz,
        "allowed": rng.integers(0, 12, size=n).astype(I64),
        "count": rng.integers(0, 12, size=n).astype(I64),
        "valid": valid,
        "spec": scoring.pack_spec(
            True,
            COLS,
            fpod.astype(I64),
            True,
            COLS,
            SRC,
            spod.astype(I64),
            w.astype(I64),
            scoring.LEAST_ALLOCATED,
            EMPTY,
            EMPTY,
            True,
            COLS,
            bpod.astype(I64),
        ),
        "wf": wf,
        "wb": wb,
    }


def _padded(t: dict[str, Any], spare: int) -> tuple[np.ndarray, ...]:
    n = t["alloc"].shape[0]

    def pad(a: np.ndarray, fill: Any) -> np.ndarray:
        out = np.full((n + spare, *a.shape[1:]), fill, dtype=a.dtype)
        out[:n] = a
        return out

    return (
        pad(t["alloc"], 7), pad(t["req"], 7), pad(t["nz"], 7), pad(t["allowed"], 7), pad(t["count"], 7),
        pad(t["valid"], True),
    )  # fmt: skip


def _check(t: dict[str, Any], spare: int = 0) -> kernels.FusedPass:
    """Every sweep this CPU runs (generic, unrolled, vector) equals the numpy reference."""
    assert FAST is not None
    n = t["alloc"].shape[0]
    table = _padded(t, spare)
    args = (*table, n, t["spec"], t["wf"], t["wb"])
    want = scoring.fused_pass_ref(*args)
    previous = FAST.simd_level()
    results = []
    try:
        for level in FAST.sweeps():
            FAST.set_simd(level)
            results.append((level, kernels.FusedPass._make(FAST.fused_pass(*args))))
    finally:
        FAST.set_simd(previous)
    for level, got in results:
        for name, g, w in zip(kernels.FusedPass._fields, got, want, strict=True):
            if isinstance(w, np.ndarray):
                np.testing.assert_array_equal(g, w, err_msg=f"{name} ({level})")
            else:
                assert g == w, f"{name} ({level})"
    return results[-1][1]


@SETTINGS
@given(default_tables(), st.integers(0, 5))
def test_vector_sweep_equals_reference(t: dict[str, Any], spare: int) -> None:
    _check(t, spare)


Pair = tuple[int, int]


def _uniform(
    n: int, alloc: Pair, req: Pair, nz: Pair, pod: Pair, w: Pair = (1, 1), wf: int = 1, wb: int = 1
) -> dict[str, Any]:
    p = np.array(pod, dtype=I64)
    return {
        "alloc": np.tile(np.array([*alloc, 5, 5], dtype=I64), (n, 1)),
        "req": np.tile(np.array([*req, 0, 0], dtype=I64), (n, 1)),
        "nz": np.tile(np.array(nz, dtype=I64), (n, 1)),
        "allowed": np.full(n, 110, dtype=I64),
        "count": np.zeros(n, dtype=I64),
        "valid": np.ones(n, dtype=np.bool_),
        "spec": scoring.pack_spec(
            True,
            COLS,
            p,
            True,
            COLS,
            SRC,
            p,
            np.array(w, dtype=I64),
            scoring.LEAST_ALLOCATED,
            EMPTY,
            EMPTY,
            True,
            COLS,
            p,
        ),
        "wf": wf,
        "wb": wb,
    }


A = LIMIT - 1  # 70368744177663; A % 100 == 63 and 63 * 27 % 100 == 1
D = (27 * A - 1) // 100  # 100 * D == 27 * A - 1: the quotient is 27 - 1/A, a hair below 27


BIG = (4000, 2**34)
EDGE_CASES = [
    # (id, rows, allocatable, requested, non-zero requested, pod, Fit weights, wf, wb)
    ("quotient 2^-46 below an integer", 8, (A, A), (0, 0), (A - D - 1, 0), (1, 1), (1, 1), 1, 1),
    ("quotient just below, mixed", 8, (A, 1000), (5, 5), (A - D - 1, 10), (1, 1), (1, 1), 1, 1),
    ("allocatable 2^46 takes the scalar loop", 8, (LIMIT, A), (0, 0), (0, 0), (1, 1), (1, 1), 1, 1),
    ("everything at 2^46 - 1", 8, (A, A), (A, A), (A, A), (1, 1), (1, 1), 1, 1),
    ("pod request 2^46: scalar for all", 8, (A, A), (0, 0), (0, 0), (LIMIT, 1), (1, 1), 1, 1),
    ("zero allocatable", 8, (0, 0), (0, 0), (0, 0), (1, 1), (1, 1), 1, 1),
    ("one resource absent", 8, (0, 4000), (0, 100), (0, 100), (1, 1), (1, 1), 1, 1),
    ("requests above allocatable", 8, (100, 100), (300, 50), (400, 60), (10, 10), (1, 1), 1, 1),
    ("unequal weights", 8, BIG, (100, 2**30), (100, 2**30), (1000, 2**31), (1, 3), 1, 1),
    ("weights at 2^20", 8, BIG, (1, 1), (1, 1), (1, 1), (2**20, 2**20), 1, 1),
    ("weight above 2^20", 8, BIG, (1, 1), (1, 1), (1, 1), (2**20 + 1, 1), 1, 1),
    ("score weights 2^31 - 1", 8, BIG, (1, 1), (1, 1), (1, 1), (1, 1), 2**31 - 1, 2**31 - 1),
    ("wrapping score weights", 8, BIG, (1, 1), (1, 1), (1, 1), (1, 1), 2**62, 1),
    ("negative and huge values", 8, (-5, 2**62), (-7, 2**61), (0, 2**62), (1, 1), (1, 1), 1, 1),
    ("seven rows: one block and a tail", 7, BIG, (1, 1), (1, 1), (1, 1), (1, 1), 1, 1),
    ("fifteen rows: eight, four and a tail", 15, BIG, (1, 1), (1, 1), (1, 1), (1, 1), 1, 1),
]


@pytest.mark.parametrize("case", [pytest.param(c[1:], id=c[0]) for c in EDGE_CASES])
def test_vector_sweep_edges(case: tuple[Any, ...]) -> None:
    _check(_uniform(*case))


def test_quotient_just_below_integer_floors() -> None:
    """The constructed case really sits below 27 (so the test above checks what it claims)."""
    assert 100 * D == 27 * A - 1
    got = _check(_uniform(4, (A, A), (0, 0), (A - D - 1, 0), (1, 1)))
    fit = got.fit
    assert fit is not None
    assert fit[0] == (26 + 99) // 2  # cpu floors to 26, memory scores (A - 1) * 100 // A == 99


def test_fallback_blocks_between_vector_blocks() -> None:
    """Rows out of range in the middle of the table: the vector path stops, the scalar loop takes
    that block, and the vector path resumes; the best-row summaries of both merge."""
    n = 37
    t = _uniform(n, (4000, 2**34), (100, 2**30), (100, 2**30), (100, 2**20))
    rng = np.random.default_rng(7)
    t["alloc"][:, 0] = rng.integers(1000, 64000, size=n)
    t["nz"][:, 0] = rng.integers(0, 1000, size=n)
    for row in (5, 6, 13, 22, 30):
        t["alloc"][row, 1] = 2**50  # out of range: scalar
    t["valid"][[2, 9]] = False
    _check(t)
    t["alloc"][:, 0] = 4000  # all rows tie except the out-of-range ones
    _check(t)


def _near_integer_rows(allocs: list[int], ks: list[int], deltas: list[int]) -> dict[str, Any]:
    """Rows whose cpu LeastAllocated quotient ``100 * (a - r) / a`` is ``k + delta / a`` exactly
    (``delta`` -1, 0 or 1: a hair below, at, or a hair above an integer), where 100 divides
    ``k * a + delta``; rows where it does not are moved to the nearest ``k`` for which it does."""
    n = len(allocs)
    t = _uniform(n, (1, 1), (0, 0), (0, 0), (1, 1))
    for row, (a, k, delta) in enumerate(zip(allocs, ks, deltas, strict=True)):
        for kk in sorted(range(101), key=lambda x: abs(x - k)):
            if (kk * a + delta) % 100 == 0 and 0 <= kk * a + delta <= 100 * a:
                d = (kk * a + delta) // 100
                t["alloc"][row, :2] = (a, a)
                t["req"][row, :2] = (0, 0)
                t["nz"][row, :2] = (a - d - 1, a - d - 1)  # r = nz + pod (1) = a - d
                break
    return t


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.one_of(st.integers(2**44, LIMIT - 1), st.integers(LIMIT, 2**52), st.integers(1, 2**20)),
            st.integers(0, 100),
            st.sampled_from([-1, 0, 1]),
        ),
        min_size=1,
        max_size=13,
    )
)
def test_least_allocated_floor_near_integers(rows: list[tuple[int, int, int]]) -> None:
    """Quotients within 1/a of an integer, for a up to 2^52: in range the vector path must floor
    them exactly; beyond 2^46 they go to the scalar loop (a looser bound would misround some)."""
    allocs, ks, deltas = (list(c) for c in zip(*rows, strict=True))
    _check(_near_integer_rows(allocs, ks, deltas))


def test_simd_levels_and_switch() -> None:
    assert FAST is not None
    assert FAST.SWEEPS[0] == "generic" and FAST.SWEEPS[1:] == FAST.SIMD_LEVELS
    levels = FAST.simd_levels()
    assert levels == FAST.SIMD_LEVELS[: len(levels)]
    assert FAST.sweeps() == ("generic", *levels)
    assert FAST.simd_level() == levels[-1]  # the best one by default
    assert FAST.set_simd("none") == levels[-1]
    assert FAST.simd_level() == "none"
    assert FAST.set_simd("generic") == "none"
    assert FAST.simd_level() == "generic"
    with pytest.raises(ValueError, match="not available"):
        FAST.set_simd("sse9")


@pytest.mark.parametrize("sweep", FAST.sweeps() if FAST is not None else ())
def test_each_sweep_alone_on_the_edge_cases(sweep: str) -> None:
    """Each sweep this CPU runs, alone, on the edge cases: a test id per sweep, so a run says
    which sweeps it checked (the generic and unrolled loops everywhere, AVX2 where the CPU has it)."""
    assert FAST is not None
    previous = FAST.set_simd(sweep)
    try:
        for case in EDGE_CASES:
            t = _uniform(*case[1:])
            args = (*_padded(t, 3), t["alloc"].shape[0], t["spec"], t["wf"], t["wb"])
            got = kernels.FusedPass._make(FAST.fused_pass(*args))
            want = scoring.fused_pass_ref(*args)
            for name, g, w in zip(kernels.FusedPass._fields, got, want, strict=True):
                if isinstance(w, np.ndarray):
                    np.testing.assert_array_equal(g, w, err_msg=f"{name} ({case[0]})")
                else:
                    assert g == w, f"{name} ({case[0]})"
        assert FAST.simd_level() == sweep
    finally:
        FAST.set_simd(previous)
