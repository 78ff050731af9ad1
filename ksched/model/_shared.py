"""One copy of the values that many records repeat.

A cluster of 130,000 nodes and 100,000 pods repeats the same few namespaces, node names, label maps,
request maps and condition tuples in every record, and a JSON decode gives each record copies of its
own. The records are immutable, so equal values can be one object: the decoders pass what they keep
through :func:`text`, :func:`string_map` and :func:`value`, which answer a previously seen equal
object. The memos are bounded; when one is full it starts over, which costs only sharing, never
correctness (a record still holds an equal value).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar

T = TypeVar("T", bound=Hashable)
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MEMO_LIMIT = 1 << 16
_maps: dict[tuple[tuple[str, object], ...], Mapping[str, object]] = {}
_values: dict[object, object] = {}
_EMPTY: Mapping[str, object] = {}


def text(s: str) -> str:
    """The interned ``s`` (``sys.intern``): names every record repeats, such as namespaces."""
    return sys.intern(s) if s else ""


def string_map(m: dict[str, str]) -> Mapping[str, str]:
    """An equal map seen before, or ``m`` (with its values interned) from now on.

    Label maps and node selectors of pods of one workload are equal; a node's labels differ
    (hostname) but share their values, which the interning keeps once.
    """
    return _shared_map(m, lambda key: {k: sys.intern(v) for k, v in key})  # type: ignore[arg-type,return-value]


def _shared_map(
    m: Mapping[str, object], make: Callable[[tuple[tuple[str, object], ...]], Mapping[str, object]]
) -> Mapping[str, object]:
    """The memo behind :func:`string_map` and :func:`int_map`: ``make`` builds the kept copy."""
    if not m:
        return _EMPTY
    key = tuple(m.items())
    return memo(_maps, key, lambda: make(key))


def memo(table: dict[K, V], key: K, make: Callable[[], V]) -> V:
    """``table[key]``, made by ``make()`` and kept the first time; a table holding
    :data:`MEMO_LIMIT` entries starts over. ``make`` may raise: nothing is kept then."""
    found = table.get(key)
    if found is not None:
        return found
    if len(table) >= MEMO_LIMIT:
        table.clear()
    made = table[key] = make()
    return made


def interned_values(m: dict[str, str]) -> dict[str, str]:
    """``m`` with its values interned, for maps that differ per record (a node's labels name the node)
    but repeat their values (zone, os, architecture)."""
    for k, v in m.items():
        m[k] = sys.intern(v)
    return m


def int_map(m: dict[str, int]) -> Mapping[str, int]:
    """An equal map of canonical quantities seen before (requests, allocatable), or ``m``."""
    return _shared_map(m, lambda _key: m)  # type: ignore[return-value]


def value(v: T) -> T:
    """An equal hashable value seen before (a tuple of images, tolerations, conditions), or ``v``."""
    if not v:
        return v
    return memo(_values, v, lambda: v)  # type: ignore[return-value]
