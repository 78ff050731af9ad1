"""Pods counted on a few rows without changing the cache: the nominated-pods pass's view.

Upstream's two-pass rule (``RunFilterPluginsWithNominatedPods``) asks a node's filters again with
the pods nominated to it added, on a clone of the node. Here only the few rows that have nominated
pods are asked, and only the filters that read a node's pods (``filter_rows``), so the pods are
summed per row once (:class:`RowDelta`) and each filter adds the sums to its copies of those rows.
The same sums can also be counted in the cache for the length of a what-if overlay
(:meth:`RowDelta.count_in`), which the whole-profile pass uses when some filter cannot answer for
a few rows.
"""

from __future__ import annotations

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.cache.what_if import WhatIf
from ksched.model.pod import HostPort, Pod


class RowDelta:
    """``pods`` on ``rows`` (one row per pod), summed per row.

    ``rows`` (the attribute) lists each row once, in first-seen order; every per-row array is
    aligned with it. Built once per distinct set of nominated pods and reused: thousands of cycles
    in a row see the same nominations, and summing them costs more than asking the filters.
    """

    __slots__ = ("_req_matrix", "_requests", "count", "nonzero", "pods", "ports", "rows")

    def __init__(self, pods: list[Pod], rows: list[int]) -> None:
        self.pods = pods  # kept alive: a memo keyed by their ids may hold this delta
        per_row: dict[int, list[int]] = {}
        requests: dict[str, dict[int, int]] = {}
        self.ports: list[tuple[int, tuple[HostPort, ...]]] = [
            (r, p.host_ports) for p, r in zip(pods, rows, strict=True) if p.host_ports
        ]
        for p, r in zip(pods, rows, strict=True):
            acc = per_row.get(r)
            if acc is None:
                acc = per_row[r] = [0, 0, 0]
            acc[0] += 1
            acc[1] += p.nonzero_cpu
            acc[2] += p.nonzero_memory
            for name, value in p.requests.items():
                if name != "pods" and value:
                    on_row = requests.setdefault(name, {})
                    on_row[r] = on_row.get(r, 0) + value
        order = list(per_row)
        self.rows = np.asarray(order, dtype=np.intp)
        sums = np.asarray([per_row[r] for r in order], dtype=np.int64).reshape(-1, 3)
        self.count = sums[:, 0].copy()
        self.nonzero = sums[:, 1:].copy()
        self._requests = [
            (name, np.asarray([on_row.get(r, 0) for r in order], dtype=np.int64))
            for name, on_row in requests.items()
        ]
        self._req_matrix: np.ndarray | None = None

    def requested(self, cluster: ClusterCache) -> np.ndarray:
        """The summed requests as a ``len(rows) x columns`` matrix in the node table's resource
        columns. A resource no node has gets its column here (the table is widened, as adding the
        pod to the cache would), so that Fit sees the request and fails the row as upstream does."""
        nodes = cluster.nodes
        cols = [(cluster.resources.column(name), values) for name, values in self._requests]
        if cols and max(c for c, _ in cols) >= nodes.requested.shape[1]:
            nodes.ensure_columns()
        width = nodes.requested.shape[1]
        matrix = self._req_matrix
        if matrix is None or matrix.shape[1] != width:
            matrix = np.zeros((self.rows.size, width), dtype=np.int64)
            for col, values in cols:
                matrix[:, col] = values
            self._req_matrix = matrix
        return matrix

    def count_in(self, cluster: ClusterCache, overlay: WhatIf) -> None:
        """Count the sums in the cache's row accounting (requested, non-zero requested, pod count,
        host ports) until ``overlay``, open on ``cluster``, ends and takes them out exactly."""
        idx = self.rows
        if idx.size == 0:
            return
        matrix = self.requested(cluster)
        used = np.flatnonzero(matrix.any(axis=0)).tolist()
        at = {r: i for i, r in enumerate(idx.tolist())}
        ports: dict[int, tuple[HostPort, ...]] = {}
        for r, held in self.ports:
            ports[at[r]] = ports.get(at[r], ()) + held
        overlay.rows(
            idx,
            requests=[(c, np.ascontiguousarray(matrix[:, c])) for c in used],
            nonzero=[np.ascontiguousarray(self.nonzero[:, 0]), np.ascontiguousarray(self.nonzero[:, 1])],
            counts=self.count,
            ports=ports,
            grouped=True,
        ).give(np.arange(idx.size, dtype=np.intp))


__all__ = ["RowDelta"]
