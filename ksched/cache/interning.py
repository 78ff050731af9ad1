"""Interning: strings and other hashable values to small dense ints.

Label values become int ids so that a label selector is an ``isin`` over an int32 column, and
taints become ids so that a node's taints are a bitset. Ids are never reused, so an id held by a
column stays meaningful for the life of the cache.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class Interner(Generic[T]):
    """Assigns each distinct value the next id, and answers lookups without adding."""

    __slots__ = ("_ids", "values")

    def __init__(self) -> None:
        self._ids: dict[T, int] = {}
        self.values: list[T] = []

    def __len__(self) -> int:
        return len(self.values)

    def intern(self, value: T) -> int:
        """The id of ``value``, assigning a new one if it was never seen."""
        vid = self._ids.get(value)
        if vid is None:
            vid = len(self.values)
            self._ids[value] = vid
            self.values.append(value)
        return vid

    def lookup(self, value: T) -> int:
        """The id of ``value``, or -1 if it was never seen (it then matches nothing)."""
        return self._ids.get(value, -1)
