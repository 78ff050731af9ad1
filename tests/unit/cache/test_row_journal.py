"""RowJournal: which rows moved since a reader's position, and when it can no longer tell."""

from __future__ import annotations

import numpy as np

from ksched.cache.row_journal import KEEP, RowJournal


def test_rows_since_a_position_come_back_distinct_and_ascending() -> None:
    j = RowJournal()
    j.add(5)
    start = j.end
    j.add(3)
    j.add(5)
    j.add_many(np.array([9, 3]))
    got = j.since(start, limit=10)
    assert got is not None and got.tolist() == [3, 5, 9]
    assert j.since(j.end, limit=10).tolist() == []  # type: ignore[union-attr]


def test_more_distinct_rows_than_the_limit_is_none() -> None:
    j = RowJournal()
    j.add_many(np.arange(5))
    assert j.since(0, limit=4) is None
    assert j.since(0, limit=5) is not None


def test_a_reader_left_behind_by_trimming_or_a_bulk_move_is_told_so() -> None:
    j = RowJournal()
    for r in range(2 * KEEP + 1):
        j.add(r % 7)
    assert j.since(0, limit=10) is None  # the oldest entries are gone
    recent = j.end - KEEP
    assert j.since(recent, limit=10) is not None
    j.add_many(np.arange(KEEP + 1))
    assert j.since(recent, limit=10**6) is None
    assert j.since(j.end, limit=10) is not None


def test_a_position_from_the_future_is_refused() -> None:
    assert RowJournal().since(3, limit=10) is None
