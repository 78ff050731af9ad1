"""Sparse per-node indexes: host ports in use and container images present.

Few pods ask for host ports and an image is on a few nodes at most, so these are dictionaries keyed
by the thing, holding the rows that have it. Only pods and nodes that use them pay for them.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ksched.model.pod import HostPort

ANY_IP = "0.0.0.0"


def clashes(wanted: HostPort, used: HostPort) -> bool:
    """Whether ``used`` on a node blocks ``wanted`` there: :meth:`PortIndex.conflicting_rows`'s rule
    for one port in use (same protocol and port, and either IP is ``0.0.0.0`` or they are equal)."""
    if wanted.protocol != used.protocol or wanted.port != used.port:
        return False
    return wanted.host_ip == ANY_IP or used.host_ip in (wanted.host_ip, ANY_IP)


class PortIndex:
    """``(protocol, port) -> host IP -> row -> count`` of host ports used by pods on each row."""

    def __init__(self) -> None:
        self._use: dict[tuple[str, int], dict[str, dict[int, int]]] = {}

    def __bool__(self) -> bool:
        return bool(self._use)

    def add(self, row: int, ports: tuple[HostPort, ...], delta: int) -> None:
        """Count (``delta=1``) or uncount (``delta=-1``) a pod's host ports on ``row``."""
        for p in ports:
            by_ip = self._use.setdefault((p.protocol, p.port), {})
            rows = by_ip.setdefault(p.host_ip, {})
            n = rows.get(row, 0) + delta
            if n > 0:
                rows[row] = n
            else:
                rows.pop(row, None)
                if not rows:
                    del by_ip[p.host_ip]
                    if not by_ip:
                        del self._use[(p.protocol, p.port)]

    def counts(self) -> dict[tuple[str, int], dict[str, dict[int, int]]]:
        """A copy of every count, to compare with a later one (the what-if overlay's check)."""
        return {key: {ip: dict(rows) for ip, rows in by_ip.items()} for key, by_ip in self._use.items()}

    def clear_row(self, row: int) -> None:
        for key in list(self._use):
            by_ip = self._use[key]
            for ip in list(by_ip):
                by_ip[ip].pop(row, None)
                if not by_ip[ip]:
                    del by_ip[ip]
            if not by_ip:
                del self._use[key]

    def conflicting_rows(self, wanted: HostPort) -> set[int]:
        """Rows where ``wanted`` clashes (upstream ``HostPortInfo.CheckConflict``).

        ``0.0.0.0`` clashes with the same protocol and port on any IP; another IP clashes with the
        same IP or with ``0.0.0.0``.
        """
        by_ip = self._use.get((wanted.protocol, wanted.port))
        if not by_ip:
            return set()
        if wanted.host_ip == ANY_IP:
            out: set[int] = set()
            for rows in by_ip.values():
                out.update(rows)
            return out
        return set(by_ip.get(wanted.host_ip, {})) | set(by_ip.get(ANY_IP, {}))

    def used_on(self, row: int) -> list[tuple[str, str, int]]:
        """(protocol, ip, port) in use on ``row``, for explanations."""
        return sorted(
            (proto, ip, port)
            for (proto, port), by_ip in self._use.items()
            for ip, rows in by_ip.items()
            if row in rows
        )


class ImageIndex:
    """Image name -> {row: size in bytes}, from nodes' ``status.images``."""

    def __init__(self) -> None:
        self._nodes: dict[str, dict[int, int]] = defaultdict(dict)
        self._names_on: dict[int, list[str]] = {}

    def set_row(self, row: int, images: list[tuple[tuple[str, ...], int]]) -> None:
        self.clear_row(row)
        names_here = []
        for names, size in images:
            for name in names:
                self._nodes[name][row] = size
                names_here.append(name)
        if names_here:
            self._names_on[row] = names_here

    def clear_row(self, row: int) -> None:
        for name in self._names_on.pop(row, ()):
            rows = self._nodes.get(name)
            if rows is not None:
                rows.pop(row, None)
                if not rows:
                    del self._nodes[name]

    def rows_with(self, name: str) -> dict[int, int]:
        """Rows that have image ``name`` and its size there (empty when none)."""
        return self._nodes.get(name, {})

    def sizes_on(self, name: str, n_rows: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, sizes) arrays for image ``name``, or None when no node has it."""
        rows = self._nodes.get(name)
        if not rows:
            return None
        r = np.fromiter(rows.keys(), dtype=np.int64, count=len(rows))
        s = np.fromiter(rows.values(), dtype=np.int64, count=len(rows))
        return r, s
