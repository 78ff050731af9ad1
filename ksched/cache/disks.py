"""The inline disks of the pods on each node row, for VolumeRestrictions' disk conflicts.

Upstream (``volumerestrictions/volume_restrictions.go: isVolumeConflict``) compares each inline
disk of the incoming pod with every volume of every pod on the node:

- GCE PD: the same ``pdName`` conflicts unless both mount it read-only;
- AWS EBS: the same ``volumeID`` always conflicts;
- iSCSI: the same IQN conflicts unless both are read-only;
- RBD: the same pool and image with at least one monitor in common conflicts unless both are
  read-only.

Few pods mount inline disks, so this is sparse: disk -> row -> how many mounts there are, and how
many of them are read-write; a node row appears only while a pod there mounts the disk.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from ksched.model.pod import Pod
from ksched.model.volumes import AWS_EBS, GCE_PD, IN_TREE, ISCSI, RBD, InTreeSource

CONFLICT_PLUGINS: Final = frozenset({GCE_PD, AWS_EBS, ISCSI, RBD})
"""Upstream ``needsRestrictionsCheck``."""

DiskKey = tuple[str, str, str]
"""(plugin, pool, disk): pool is empty but for RBD."""


def disk_sources(pod: Pod) -> list[InTreeSource]:
    """The pod's inline disks VolumeRestrictions checks, in order."""
    return [
        v.in_tree
        for v in pod.volumes
        if v.kind == IN_TREE and v.in_tree is not None and v.in_tree.plugin in CONFLICT_PLUGINS
    ]


def _key(src: InTreeSource) -> DiskKey:
    return (src.plugin, src.pool if src.plugin == RBD else "", src.disk)


class DiskIndex:
    """disk -> row -> mounts; RBD mounts also keep their monitors (scheduling thread only)."""

    def __init__(self) -> None:
        self._mounts: dict[DiskKey, dict[int, list[int]]] = {}
        """disk -> row -> [mounts, read-write mounts]."""
        self._rbd: dict[DiskKey, dict[int, Counter[tuple[frozenset[str], bool]]]] = {}
        """RBD disk -> row -> (monitors, read-only) -> mounts."""

    def __bool__(self) -> bool:
        return bool(self._mounts)

    def count(self, row: int, sources: list[InTreeSource], sign: int) -> None:
        """Count (``sign=1``) or uncount (-1) a pod's inline disks on ``row``."""
        for src in sources:
            key = _key(src)
            rows = self._mounts.setdefault(key, {})
            got = rows.setdefault(row, [0, 0])
            got[0] += sign
            if not src.read_only:
                got[1] += sign
            if got[0] <= 0:
                del rows[row]
                if not rows:
                    del self._mounts[key]
            if src.plugin == RBD:
                by_row = self._rbd.setdefault(key, {})
                mounts = by_row.setdefault(row, Counter())
                mounts[(src.monitors, src.read_only)] += sign
                if mounts[(src.monitors, src.read_only)] <= 0:
                    del mounts[(src.monitors, src.read_only)]
                if not mounts:
                    del by_row[row]
                    if not by_row:
                        del self._rbd[key]

    def conflicting_rows(self, src: InTreeSource) -> list[int]:
        """Rows where a pod mounts a disk that ``src`` conflicts with."""
        key = _key(src)
        rows = self._mounts.get(key)
        if not rows:
            return []
        if src.plugin == AWS_EBS:
            return list(rows)
        if src.plugin != RBD:
            return [r for r, (_, rw) in rows.items() if rw > 0] if src.read_only else list(rows)
        out = []
        for row, mounts in self._rbd.get(key, {}).items():
            for (monitors, read_only), _n in mounts.items():
                if not monitors.isdisjoint(src.monitors) and not (src.read_only and read_only):
                    out.append(row)
                    break
        return out

    def clear_row(self, row: int) -> None:
        for table in (self._mounts, self._rbd):
            for key in [k for k, rows in table.items() if row in rows]:
                rows = table[key]
                del rows[row]
                if not rows:
                    del table[key]

    def state(self) -> dict[DiskKey, dict[int, tuple[int, int]]]:
        """A copy of every count (property tests compare it with a recount)."""
        return {k: {r: (m[0], m[1]) for r, m in rows.items()} for k, rows in self._mounts.items()}


def conflicts(src: InTreeSource, other: InTreeSource) -> bool:
    """Upstream ``isVolumeConflict`` for two inline disks (the plain per-pair rule)."""
    if src.plugin != other.plugin or src.disk != other.disk:
        return False
    if src.plugin == AWS_EBS:
        return True
    if src.plugin == RBD and (src.pool != other.pool or src.monitors.isdisjoint(other.monitors)):
        return False
    return not (src.read_only and other.read_only)


__all__ = ["CONFLICT_PLUGINS", "DiskIndex", "conflicts", "disk_sources"]
