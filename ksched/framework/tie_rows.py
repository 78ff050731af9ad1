"""The rows tied at the best total between batched cycles, with cheap removals.

A batched cycle at 130,000 equal nodes removes one row from about 130,000 tied ones (the row the
previous pod took); deleting it from a sorted array copies the whole array every cycle. Here
removals are set aside (positions into the sorted array) and applied together once there are
:data:`COMPACT_AT` of them, and the k-th remaining row is found by a binary search over the
removed positions. Additions are rare (a row rises to the best) and compact first.
"""

from __future__ import annotations

import bisect

import numpy as np

COMPACT_AT = 512
"""Removed positions kept aside before the array is rewritten without them."""


class TieRows:
    """Ascending distinct rows; :meth:`nth` is the k-th of those not removed."""

    __slots__ = ("_gone", "_rows")

    def __init__(self, rows: np.ndarray) -> None:
        self._rows = rows
        self._gone: list[int] = []
        """Positions into ``_rows`` removed since the last compaction, ascending."""

    @property
    def size(self) -> int:
        return int(self._rows.size) - len(self._gone)

    def nth(self, k: int) -> int:
        """The k-th remaining row (0-based). With removed positions ``g_0 < g_1 < ...``, the j-th
        of them has ``g_j - j`` remaining rows before it, so the k-th remaining row sits ``j``
        places after position k, j being how many of those counts are at most k."""
        gone = self._gone
        j = bisect.bisect_right(range(len(gone)), k, key=lambda i: gone[i] - i) if gone else 0
        return int(self._rows[k + j])

    def discard(self, rows: np.ndarray) -> None:
        """Remove those of ``rows`` (ascending) that are here."""
        at = np.searchsorted(self._rows, rows)
        hit = at < self._rows.size
        hit[hit] = self._rows[at[hit]] == rows[hit]
        gone = self._gone
        for p in at[hit].tolist():
            i = bisect.bisect_left(gone, p)
            if i == len(gone) or gone[i] != p:
                gone.insert(i, p)
        if len(gone) >= COMPACT_AT:
            self._compact()

    def add(self, rows: np.ndarray) -> None:
        """Add ``rows`` (ascending, none of them here)."""
        self._compact()
        self._rows = np.insert(self._rows, np.searchsorted(self._rows, rows), rows)

    def _compact(self) -> None:
        if self._gone:
            self._rows = np.delete(self._rows, self._gone)
            self._gone = []
