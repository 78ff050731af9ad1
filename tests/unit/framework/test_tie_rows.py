"""TieRows against a plain sorted list: the same k-th row after any removals and additions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework import tie_rows
from ksched.framework.tie_rows import TieRows

ROWS = 60
steps = st.lists(
    st.tuples(st.sampled_from(["discard", "add"]), st.lists(st.integers(0, ROWS - 1), max_size=5)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, ROWS - 1), min_size=1), steps, st.sampled_from([3, 512]))
def test_nth_is_the_kth_remaining_row(
    start: set[int], ops: list[tuple[str, list[int]]], compact: int
) -> None:
    tie_rows.COMPACT_AT, saved = compact, tie_rows.COMPACT_AT
    try:
        ties, model = TieRows(np.array(sorted(start), dtype=np.intp)), set(start)
        for op, picked in ops:
            rows = sorted(set(picked))
            if op == "discard":
                ties.discard(np.array(rows, dtype=np.intp))
                model -= set(rows)
            else:
                fresh = [r for r in rows if r not in model]
                ties.add(np.array(fresh, dtype=np.intp))
                model |= set(fresh)
            assert ties.size == len(model)
            assert [ties.nth(k) for k in range(ties.size)] == sorted(model)
    finally:
        tie_rows.COMPACT_AT = saved
