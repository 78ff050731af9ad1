"""A keyed min-heap with lazy deletion: the stdlib ``heapq`` priority-queue recipe.

Entries are ``[key, count, uid]``; ``count`` breaks exact key ties in insertion order so the heap
never compares uids. Removing or re-keying a uid marks its old entry dead (``uid`` slot set to
``None``) instead of searching the list; dead entries are skipped when they reach the top.
When dead entries outnumber live ones the list is rebuilt, so memory stays within 2x.

Not thread-safe: the scheduling queue that owns it is single-threaded.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Min-heap of items addressed by uid; each uid at most once."""

    __slots__ = ("_counter", "_dead", "_entries", "_heap", "_items")

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        self._items: dict[str, T] = {}
        self._counter = itertools.count()
        self._dead = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, uid: object) -> bool:
        return uid in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))

    def get(self, uid: str) -> T | None:
        return self._items.get(uid)

    def push(self, uid: str, key: Any, item: T) -> None:
        """Add ``item`` under ``uid``, or replace it and its key if ``uid`` is present."""
        if uid in self._entries:
            self._kill(uid)
        entry = [key, next(self._counter), uid]
        self._entries[uid] = entry
        self._items[uid] = item
        heapq.heappush(self._heap, entry)

    def remove(self, uid: str) -> T | None:
        """Remove and return the item under ``uid`` (None if absent)."""
        if uid not in self._entries:
            return None
        item = self._items[uid]
        self._kill(uid)
        return item

    def peek(self) -> T | None:
        self._drop_dead_top()
        return self._items[self._heap[0][2]] if self._heap else None

    def peek_key(self) -> Any:
        self._drop_dead_top()
        return self._heap[0][0] if self._heap else None

    def pop(self) -> T | None:
        self._drop_dead_top()
        if not self._heap:
            return None
        entry = heapq.heappop(self._heap)
        uid = entry[2]
        del self._entries[uid]
        return self._items.pop(uid)

    def _kill(self, uid: str) -> None:
        entry = self._entries.pop(uid)
        del self._items[uid]
        entry[2] = None
        self._dead += 1
        if self._dead > 64 and self._dead > len(self._entries):
            self._heap = [e for e in self._heap if e[2] is not None]
            heapq.heapify(self._heap)
            self._dead = 0

    def _drop_dead_top(self) -> None:
        heap = self._heap
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
            self._dead -= 1
