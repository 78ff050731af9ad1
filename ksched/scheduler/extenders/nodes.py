"""The Node objects as the API server sent them, for extenders that are not node-cache-capable.

Upstream sends such an extender the Node objects of its informer cache. ksched's cache keeps
compact records only, so when (and only when) such an extender is configured the node informer
decodes through :meth:`RawNodes.decode`, which keeps each node's JSON, encoded once and without
``metadata.managedFields`` (kube-scheduler's informers strip them too), beside the record it
made. :class:`~ksched.scheduler.extenders.wire.NodeObjects` sends those bytes while the cache
still holds that very record, and rebuilds the object from the record otherwise.

``decode`` runs on the I/O thread and the lookups on the scheduling thread: each entry is one
tuple replaced whole, which is atomic for a dict under the interpreter lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ksched.kube.events import Deleted, Relisted
from ksched.model.node import Node, node_from_dict


class RawNodes:
    """Node name -> (the record decoded from it, its JSON)."""

    def __init__(self, decode: Callable[[Any], Node] = node_from_dict) -> None:
        self._decode = decode
        self._by_name: dict[str, tuple[Node, bytes]] = {}

    def decode(self, raw: Any) -> Node:
        """The informer's decoder: the record, with the object kept beside it."""
        node = self._decode(raw)
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        if isinstance(meta, dict) and "managedFields" in meta:
            raw = {**raw, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
        self._by_name[node.name] = (node, orjson.dumps(raw))
        return node

    def encoded(self, node: Node) -> bytes | None:
        """The JSON the record ``node`` was decoded from; None when the node has changed since or
        came from elsewhere."""
        kept = self._by_name.get(node.name)
        return kept[1] if kept is not None and kept[0] is node else None

    def sink(self, forward: Callable[[Any], None]) -> Callable[[Any], None]:
        """The node informer's sink: forgets deleted nodes (and, after a relist, every node not
        listed), then hands each event on to ``forward``."""

        def sink(event: Any) -> None:
            if isinstance(event, Deleted):
                self._by_name.pop(getattr(event.obj, "name", ""), None)
            elif isinstance(event, Relisted):
                listed = {getattr(o, "name", "") for o in event.objs}
                for name in [n for n in list(self._by_name) if n not in listed]:
                    self._by_name.pop(name, None)
            forward(event)

        return sink

    def __len__(self) -> int:
        return len(self._by_name)
