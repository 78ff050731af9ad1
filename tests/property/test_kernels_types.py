"""The ctypedefs in ``ksched/_fast/_types.pxd`` match the numpy dtypes the Python side allocates,
and the codes of ``kernels.pxd`` match ``ksched.framework.kernels.CONTRACT``."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.errors import BuildError
from ksched.framework import kernels
from ksched.framework.plugins.noderesources import scoring

FAST = kernels.compiled()
pytestmark = pytest.mark.skipif(
    FAST is None, reason="ksched._fast is not built (python setup.py build_ext --inplace)"
)


@pytest.mark.parametrize(
    ("typedef", "dtype"),
    [("i64", np.int64), ("u64", np.uint64), ("u8", np.uint8), ("f64", np.float64)],
)
def test_typedef_matches_dtype(typedef: str, dtype: type) -> None:
    assert FAST is not None
    size, signed = FAST.typedefs()[typedef]
    assert size == np.dtype(dtype).itemsize
    assert signed == (np.dtype(dtype).kind in "if")


def test_node_table_arrays_have_kernel_dtypes() -> None:
    nodes = ClusterCache().nodes
    for name in ("allocatable", "requested", "nonzero_requested", "allowed_pods", "pod_count"):
        arr = getattr(nodes, name)
        assert arr.dtype == np.int64 and arr.flags.c_contiguous, name
    assert nodes.valid.dtype == np.bool_ and np.dtype(np.bool_).itemsize == np.dtype(np.uint8).itemsize


# The codes of ksched/_fast/kernels.pxd, pinned: the packed spec's layout and the plugins' codes
# depend on them, so changing one is a contract change on both sides, made here on purpose.
PINNED_CODES = {
    "LEAST_ALLOCATED": 0,
    "MOST_ALLOCATED": 1,
    "REQUESTED_TO_CAPACITY_RATIO": 2,
    "SRC_REQUESTED": 0,
    "SRC_NONZERO_CPU": 1,
    "SRC_NONZERO_MEMORY": 2,
    "MAX_FILTER_RESOURCES": 31,
    "SPEC_HEADER": 8,
    "SPEC_FILTER": 1,
    "SPEC_FIT": 2,
    "SPEC_BALANCED": 4,
    "MAX_NODE_SCORE": 100,
    "MAX_UTILIZATION": 100,
}


def test_python_codes_are_pinned() -> None:
    assert kernels.CONTRACT == PINNED_CODES
    for name, value in PINNED_CODES.items():
        assert getattr(kernels, name) == value, name
    assert scoring.STRATEGY_CODES == {
        "LeastAllocated": kernels.LEAST_ALLOCATED,
        "MostAllocated": kernels.MOST_ALLOCATED,
        "RequestedToCapacityRatio": kernels.REQUESTED_TO_CAPACITY_RATIO,
    }


def test_compiled_codes_equal_python_codes() -> None:
    assert FAST is not None
    assert FAST.constants() == kernels.CONTRACT


def test_mismatched_build_is_refused_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled module whose codes differ is a BuildError naming the code, on every call, not
    a silent fallback to numpy."""
    import ksched._fast

    stale = types.ModuleType("ksched._fast.kernels")
    stale.constants = lambda: {**kernels.CONTRACT, "SPEC_FIT": 8}  # type: ignore[attr-defined]
    with pytest.raises(BuildError, match="SPEC_FIT"):
        kernels.check_contract(stale)
    monkeypatch.setitem(sys.modules, "ksched._fast.kernels", stale)
    monkeypatch.setattr(ksched._fast, "kernels", stale, raising=False)
    try:
        for _ in range(2):
            with pytest.raises(BuildError, match=r"'SPEC_FIT': \(2, 8\)"):
                kernels.use_compiled(True)
    finally:
        monkeypatch.undo()
        kernels.use_compiled(True)
    assert kernels.compiled() is FAST
