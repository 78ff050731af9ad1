"""The ctypedefs in ``ksched/_fast/_types.pxd`` match the numpy dtypes the Python side allocates."""

from __future__ import annotations

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.framework import kernels

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
