"""The order in which upstream's Filter visits nodes: its ``nodeTree`` list, as the snapshot keeps it.

Upstream (``backend/cache/node_tree.go``) files each node under a zone key and lists nodes round
robin over the zones: the first node of every zone, then the second of every zone, and so on,
skipping zones that ran out. Zones keep the order they first appeared in (a zone that empties is
dropped, and goes to the end if it comes back); nodes keep their insertion order within a zone; a
node whose zone label changes moves to the end of its new zone.

The snapshot (``UpdateSnapshot``) rebuilds its node list from the tree only when the set of nodes
changed since the last build: a zone change alone, or a node deleted and added again between two
cycles, leaves the list as it was. :meth:`NodeTree.rows` does the same, which is what makes
``percentageOfNodesToScore``'s round-robin search visit the nodes upstream visits.

Only the scheduling thread calls the mutators (through :class:`~ksched.cache.cluster.ClusterCache`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def zone_key(labels: Mapping[str, str]) -> str:
    """Upstream ``GetZoneKey``: ``region:\\x00:zone``, the deprecated beta labels first, or ``""``."""
    zone = labels[BETA_ZONE] if BETA_ZONE in labels else labels.get(ZONE, "")
    region = labels[BETA_REGION] if BETA_REGION in labels else labels.get(REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names per zone key, and the rows of the snapshot's node list built from them."""

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        """Zone key -> node names; the dict's order is the zones' order."""
        self._zone_of: dict[str, str] = {}
        self._listed: list[str] | None = None
        """The names in the order of the last build, or None before the first."""
        self._rows: np.ndarray = np.zeros(0, dtype=np.int64)
        self._added: set[str] = set()
        """Names added since the last build (and not removed again)."""
        self._removed: set[str] = set()
        """Names of the last build removed since (and not added again)."""
        self._moved = False
        """A listed node was removed and added again: its row may have changed."""

    def __len__(self) -> int:
        return len(self._zone_of)

    def add(self, name: str, zone: str) -> None:
        """A new node (upstream ``addNode``); a known one is an update."""
        if name in self._zone_of:
            self.update(name, zone)
            return
        self._insert(name, zone)
        if name in self._removed:
            self._removed.discard(name)
            self._moved = True
        else:
            self._added.add(name)

    def update(self, name: str, zone: str) -> None:
        """A node's labels changed (upstream ``updateNode``): it moves only if its zone key did."""
        old = self._zone_of.get(name)
        if old == zone:
            return
        if old is not None:
            self._drop(name, old)
        self._insert(name, zone)

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        self._drop(name, zone)
        if name in self._added:
            self._added.discard(name)
        else:
            self._removed.add(name)

    def _insert(self, name: str, zone: str) -> None:
        self._zone_of[name] = zone
        self._zones.setdefault(zone, []).append(name)

    def _drop(self, name: str, zone: str) -> None:
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def names(self) -> list[str]:
        """Upstream ``list()``: round robin over the zones, in their order."""
        zones = list(self._zones.values())
        out: list[str] = []
        depth = 0
        while zones:
            out.extend(names[depth] for names in zones)
            depth += 1
            zones = [names for names in zones if len(names) > depth]
        return out

    def rows(self, row_of: Mapping[str, int]) -> np.ndarray:
        """The snapshot's node list as node-table rows (int64), rebuilt as upstream rebuilds it.

        The array is shared until the next rebuild: do not write to it.
        """
        if self._listed is None or self._added or self._removed:
            self._listed = self.names()
            self._added.clear()
            self._removed.clear()
            self._moved = True
        if self._moved:
            listed = self._listed
            self._rows = np.fromiter((row_of[n] for n in listed), dtype=np.int64, count=len(listed))
            self._rows.flags.writeable = False
            self._moved = False
        return self._rows
