"""DefaultNormalizeScore, ported from upstream
``pkg/scheduler/framework/plugins/helper/normalize_score_test.go`` (TestDefaultNormalizeScore, 9 cases),
plus the feasible-mask and plain-int behaviour ksched adds."""

from __future__ import annotations

import numpy as np
import pytest

from ksched.framework.normalize import default_normalize_score

UPSTREAM = [
    pytest.param(False, [1, 2, 3, 4], [25, 50, 75, 100], id="case_0"),
    pytest.param(True, [1, 2, 3, 4], [75, 50, 25, 0], id="case_1"),
    pytest.param(False, [1000, 10, 20, 30], [100, 1, 2, 3], id="case_2"),
    pytest.param(True, [1000, 10, 20, 30], [0, 99, 98, 97], id="case_3"),
    pytest.param(False, [1, 1, 1, 1], [100, 100, 100, 100], id="case_4"),
    pytest.param(False, [1000, 1, 1, 1], [100, 0, 0, 0], id="case_5"),
    pytest.param(True, [0, 1, 1, 1], [100, 0, 0, 0], id="case_6"),
    pytest.param(False, [0, 0, 0, 0], [0, 0, 0, 0], id="case_7"),
    pytest.param(True, [0, 0, 0, 0], [100, 100, 100, 100], id="case_8"),
]


def _expand(out: np.ndarray | int, n: int) -> list[int]:
    if isinstance(out, np.ndarray):
        return [int(v) for v in out[:n]]
    return [int(out)] * n


@pytest.mark.parametrize(("reverse", "scores", "expected"), UPSTREAM)
def test_default_normalize_score(reverse: bool, scores: list[int], expected: list[int]) -> None:
    arr = np.array(scores, dtype=np.int64)
    out = default_normalize_score(arr, np.ones(len(scores), dtype=np.bool_), reverse)
    assert _expand(out, len(scores)) == expected


def test_infeasible_rows_do_not_set_the_maximum() -> None:
    scores = np.array([10, 5, 1000], dtype=np.int64)
    feasible = np.array([True, True, False])
    out = default_normalize_score(scores, feasible, reverse=False)
    assert _expand(out, 2) == [100, 50]
    out = default_normalize_score(scores, feasible, reverse=True)
    assert _expand(out, 2) == [0, 50]


@pytest.mark.parametrize(
    ("value", "reverse", "expected"),
    [(0, False, 0), (0, True, 100), (7, False, 100), (7, True, 0)],
)
def test_uniform_int_scores(value: int, reverse: bool, expected: int) -> None:
    assert default_normalize_score(value, np.ones(3, dtype=np.bool_), reverse) == expected


def test_does_not_modify_input() -> None:
    scores = np.array([1, 2], dtype=np.int64)
    default_normalize_score(scores, np.ones(2, dtype=np.bool_), reverse=True)
    assert scores.tolist() == [1, 2]
