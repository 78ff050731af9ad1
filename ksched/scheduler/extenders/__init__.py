"""Scheduler extenders over HTTP: the client (:mod:`.http`), the wire format (:mod:`.wire`), TLS
(:mod:`.tls`) and binding through an extender (:mod:`.binding`). The framework's side (the
Protocol and the runners) is :mod:`ksched.framework.extender`; ``docs/extenders.md`` describes both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksched.config.extenders import Extender as ExtenderConfig
from ksched.kube.io_thread import IOThread
from ksched.scheduler.extenders.binding import ExtenderOutbox
from ksched.scheduler.extenders.http import MAX_REPLY_BYTES, HTTPExtender
from ksched.scheduler.extenders.nodes import RawNodes

__all__ = [
    "MAX_REPLY_BYTES",
    "ExtenderOutbox",
    "HTTPExtender",
    "RawNodes",
    "build_extenders",
    "raw_nodes_for",
]


def build_extenders(
    configs: Sequence[ExtenderConfig], io: IOThread, observe: Any = None, raw_nodes: RawNodes | None = None
) -> tuple[HTTPExtender, ...]:
    """Upstream ``buildExtenders``: one :class:`HTTPExtender` per configured extender, in order
    (the ``ignoredByScheduler`` resources: :func:`ksched.config.extenders.with_ignored_resources`)."""
    return tuple(HTTPExtender(c, io, observe, raw_nodes) for c in configs)


def raw_nodes_for(configs: Sequence[ExtenderConfig]) -> RawNodes | None:
    """A store of the nodes' JSON when some extender is not node-cache-capable (it is sent Node
    objects), else None: the node informer then decodes as usual and nothing is kept."""
    return RawNodes() if any(not c.node_cache_capable for c in configs) else None
