"""Pods in the cache that carry inter-pod (anti-)affinity, so the plugins iterate only those.

Upstream keeps two lists per node (``NodeInfo.PodsWithAffinity`` and
``PodsWithRequiredAntiAffinity``, filled by ``podWithAffinity`` / ``podWithRequiredAntiAffinity``
in ``framework/types.go``). Every incoming pod must be checked against the existing pods' required
anti-affinity terms, and scoring visits pods with any terms; both are a small minority of pods.

The index holds the cache's own pod entries (anything with ``.pod`` and ``.row``), so a pod's row
is always current: -1 while its node is not in the table (such pods are skipped by the queries).
The raw term dicts stay on ``Pod.affinity``; parsing them is the plugins' job.

Every mutator is called only from the scheduling thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np

from ksched.model.pod import Pod


class _Entry(Protocol):
    pod: Pod
    row: int


def has_pod_affinity(pod: Pod) -> bool:
    """Upstream ``podWithAffinity``: a ``podAffinity`` or ``podAntiAffinity`` is set (even empty)."""
    aff = pod.affinity
    return aff.get("podAffinity") is not None or aff.get("podAntiAffinity") is not None


def has_required_anti_affinity(pod: Pod) -> bool:
    """Upstream ``podWithRequiredAntiAffinity``: at least one required anti-affinity term."""
    anti: Any = pod.affinity.get("podAntiAffinity")
    if not isinstance(anti, Mapping):
        return False
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


class AffinityPodIndex:
    """uid → entry for pods with any pod (anti-)affinity, and for those with required anti-affinity."""

    __slots__ = ("_required_anti", "_with_affinity")

    def __init__(self) -> None:
        self._with_affinity: dict[str, _Entry] = {}
        self._required_anti: dict[str, _Entry] = {}

    def add(self, entry: _Entry) -> None:
        pod = entry.pod
        if has_pod_affinity(pod):
            self._with_affinity[pod.uid] = entry
            if has_required_anti_affinity(pod):
                self._required_anti[pod.uid] = entry

    def discard(self, uid: str) -> None:
        self._with_affinity.pop(uid, None)
        self._required_anti.pop(uid, None)

    @property
    def with_affinity_count(self) -> int:
        return len(self._with_affinity)

    @property
    def required_anti_affinity_count(self) -> int:
        return len(self._required_anti)

    def with_affinity(self) -> Iterator[tuple[Pod, int]]:
        """(pod, row) of every pod with pod (anti-)affinity on a node in the table."""
        return ((e.pod, e.row) for e in self._with_affinity.values() if e.row >= 0)

    def with_required_anti_affinity(self) -> Iterator[tuple[Pod, int]]:
        """(pod, row) of every pod with required anti-affinity terms on a node in the table."""
        return ((e.pod, e.row) for e in self._required_anti.values() if e.row >= 0)

    def rows_with_affinity(self) -> np.ndarray:
        """Distinct rows holding a pod with pod (anti-)affinity (upstream's ``HavePodsWithAffinityList``)."""
        rows = [e.row for e in self._with_affinity.values() if e.row >= 0]
        return np.unique(np.asarray(rows, dtype=np.intp))
