"""The resource column registry: which resource lives in which column of the node arrays.

cpu, memory and ephemeral-storage always hold columns 0, 1 and 2, so kernels can address them by
constant; every other resource (``nvidia.com/gpu``, ``hugepages-2Mi``, ...) gets the next column
the first time a node or pod names it. ``pods`` is not a column: node pod capacity and pod counts
are kept apart because every pod, whatever it requests, uses one.
"""

from __future__ import annotations

from typing import Final

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
CPU_COL: Final = 0
MEMORY_COL: Final = 1
EPHEMERAL_COL: Final = 2
FIXED_COLUMNS: Final = (CPU, MEMORY, EPHEMERAL_STORAGE)


def is_extended(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``: has a ``/``, no ``kubernetes.io/``, no ``requests.`` prefix."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


class ResourceColumns:
    """Maps resource names to stable column indices; columns are never removed."""

    __slots__ = ("_index", "names")

    def __init__(self) -> None:
        self.names: list[str] = list(FIXED_COLUMNS)
        self._index: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def get(self, name: str) -> int | None:
        """The column of ``name``, or None if no object has named it yet."""
        return self._index.get(name)

    def column(self, name: str) -> int:
        """The column of ``name``, adding one if it is new. Called only from the scheduling thread."""
        col = self._index.get(name)
        if col is None:
            col = len(self.names)
            self.names.append(name)
            self._index[name] = col
        return col
