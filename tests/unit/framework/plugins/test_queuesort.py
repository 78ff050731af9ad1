"""PrioritySort, ported from upstream ``pkg/scheduler/framework/plugins/queuesort/priority_sort_test.go``
(TestLess, 4 cases), plus the heap key's agreement with ``Less``."""

from __future__ import annotations

import itertools

import pytest

from ksched.framework.plugins.queuesort import NAME, PrioritySort, less, new

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


@pytest.mark.parametrize(
    ("p1", "t1", "p2", "t2", "expected"),
    [
        pytest.param(LOW, 0.0, HIGH, 0.0, False, id="p1.priority less than p2.priority"),
        pytest.param(HIGH, 0.0, LOW, 0.0, True, id="p1.priority greater than p2.priority"),
        pytest.param(
            HIGH, T1, HIGH, T2, True, id="equal priority. p1 is added to schedulingQ earlier than p2"
        ),
        pytest.param(
            HIGH, T2, HIGH, T1, False, id="equal priority. p2 is added to schedulingQ earlier than p1"
        ),
    ],
)
def test_less(p1: int, t1: float, p2: int, t2: float, expected: bool) -> None:
    assert less(p1, t1, p2, t2) is expected
    assert PrioritySort().less(p1, t1, p2, t2) is expected


def test_sort_key_orders_like_less() -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    assert plugin.name == NAME == "PrioritySort"
    pods = [(p, t) for p in (-5, 0, 10, 2**31 - 1) for t in (1.0, 2.0, 3.5)]
    for (pa, ta), (pb, tb) in itertools.permutations(pods, 2):
        assert (plugin.sort_key(pa, ta) < plugin.sort_key(pb, tb)) == less(pa, ta, pb, tb)


def test_sorted_queue_order() -> None:
    plugin = PrioritySort()
    queued = [("a", 0, 3.0), ("b", 100, 5.0), ("c", 100, 4.0), ("d", -1, 1.0), ("e", 0, 2.0)]
    order = [name for name, prio, ts in sorted(queued, key=lambda q: plugin.sort_key(q[1], q[2]))]
    assert order == ["c", "b", "e", "a", "d"]
