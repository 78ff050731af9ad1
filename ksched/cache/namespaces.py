"""Namespaces the cache knows, for ``namespaceSelector`` in inter-pod affinity and spread terms.

Only names and labels are kept. A namespace the cache has not seen has no labels (so only an empty
selector matches it), which is what upstream's lister-based lookup gives for a missing namespace.
``matching(selector)`` answers with the *known* namespaces whose labels match, memoized per
selector; any namespace change drops the memo (namespaces change rarely).

Every mutator is called only from the scheduling thread.
"""

from __future__ import annotations

from collections.abc import Mapping

from ksched.model.namespace import Namespace
from ksched.model.selectors import LabelSelector

_NO_LABELS: Mapping[str, str] = {}


class NamespaceIndex:
    """Name → labels, and memoized ``namespaceSelector`` evaluation."""

    __slots__ = ("_labels", "_memo", "generation")

    def __init__(self) -> None:
        self._labels: dict[str, Mapping[str, str]] = {}
        self._memo: dict[LabelSelector | None, frozenset[str]] = {}
        self.generation = 0
        """Bumped on every namespace change; callers caching derived data key on it."""

    def __len__(self) -> int:
        return len(self._labels)

    def __contains__(self, name: object) -> bool:
        return name in self._labels

    def set(self, ns: Namespace) -> None:
        """Add or update a namespace."""
        old = self._labels.get(ns.name)
        if old is not None and old == ns.labels:
            return
        self._labels[ns.name] = dict(ns.labels)
        self._memo.clear()
        self.generation += 1

    def remove(self, name: str) -> None:
        if self._labels.pop(name, None) is not None:
            self._memo.clear()
            self.generation += 1

    def labels(self, name: str) -> Mapping[str, str]:
        """The namespace's labels; empty for a namespace not known."""
        return self._labels.get(name, _NO_LABELS)

    def matching(self, selector: LabelSelector | None) -> frozenset[str]:
        """Known namespaces whose labels match ``selector`` (``None`` matches none)."""
        hit = self._memo.get(selector)
        if hit is None:
            if selector is None:
                hit = frozenset()
            else:
                hit = frozenset(n for n, labels in self._labels.items() if selector.matches(labels))
            self._memo[selector] = hit
        return hit
