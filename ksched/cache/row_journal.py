"""The rows whose ``row_version`` moved, in the order they moved.

A reader that remembers a position (:attr:`RowJournal.end`) learns later which rows moved since
without comparing every row's version: at 130,000 nodes that comparison costs more than the rest of a
batched cycle. The journal keeps the last :data:`KEEP` entries at least; a reader who fell further
behind, or a bulk move of more rows than that, gets None and starts over from a full evaluation.
"""

from __future__ import annotations

import numpy as np

KEEP = 4096
"""Entries a reader may fall behind by and still be told which rows moved."""


class RowJournal:
    """Positions are absolute (they only grow), so a reader's position stays meaningful when the
    oldest entries are dropped."""

    __slots__ = ("_rows", "_start")

    def __init__(self) -> None:
        self._rows: list[int] = []
        self._start = 0
        """The absolute position of ``_rows[0]``."""

    @property
    def end(self) -> int:
        """The position after the newest entry: what a reader remembers."""
        return self._start + len(self._rows)

    def add(self, row: int) -> None:
        self._rows.append(row)
        if len(self._rows) > 2 * KEEP:
            self._drop(len(self._rows) - KEEP)

    def add_many(self, rows: np.ndarray) -> None:
        """Record ``rows`` (any order, repeats allowed); more than :data:`KEEP` at once forget the
        past instead, since no reader could use that many."""
        if rows.size > KEEP:
            self._start = self.end + int(rows.size)
            self._rows = []
            return
        self._rows.extend(rows.tolist())
        if len(self._rows) > 2 * KEEP:
            self._drop(len(self._rows) - KEEP)

    def since(self, position: int, limit: int) -> np.ndarray | None:
        """The distinct rows that moved after ``position``, ascending; None when the journal no
        longer reaches back that far or more than ``limit`` rows moved."""
        if position < self._start or position > self.end:
            return None
        distinct = sorted(set(self._rows[position - self._start :]))  # a few entries: cheaper than numpy
        return None if len(distinct) > limit else np.array(distinct, dtype=np.intp)

    def _drop(self, count: int) -> None:
        del self._rows[:count]
        self._start += count
