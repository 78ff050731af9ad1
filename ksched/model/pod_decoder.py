"""Decoding a pod's watch events without reading its spec again when only the binding changed it.

The pods informer decodes every pod at least twice: pending (ADDED) and bound (MODIFIED, with
``spec.nodeName`` set by the binding). Reading the spec (containers, quantities, tolerations,
affinity) is most of :func:`~ksched.model.pod.pod_from_dict`'s cost, and at thousands of bindings a
second the second decode is a few percent of the scheduler's CPU. :class:`PodDecoder` remembers the
spec of each pending pod; when the next event for that uid carries the same spec but for
``nodeName``, the spec-derived fields are taken over and only ``metadata`` and ``status`` are read.
"""

from __future__ import annotations

from typing import Any

from ksched.model.pod import (
    META_STATUS_FIELDS,
    Pod,
    meta_status_values,
    pod_from_dict,
    pod_header,
    pod_values,
)

_FIELD_AT = {name: i for i, name in enumerate(Pod.__dataclass_fields__)}
_META_STATUS_AT = tuple(_FIELD_AT[name] for name in META_STATUS_FIELDS)
_NODE_NAME_AT = _FIELD_AT["node_name"]

DEFAULT_LIMIT = 100_000
"""Pending pods remembered at most; beyond this the memory starts over (a cost, never a mistake)."""


class PodDecoder:
    """:func:`pod_from_dict` with a memory of pending pods' specs (one decoder per informer: it is
    not thread-safe, and the informer calls it from one thread).

    A pod's spec is remembered while it has no ``nodeName`` and forgotten by the event that binds
    it. The raw spec is compared (``==``, after taking ``nodeName`` out of the new one) with the
    remembered one; only an equal spec of the same namespace and name is reused. (``==`` takes
    ``1``, ``1.0`` and ``True`` for one another; an API server never turns one into another
    between two versions of a pod, and the first version was read in full.)
    """

    __slots__ = ("_limit", "_pending")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._pending: dict[str, tuple[dict[str, Any], Pod]] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._pending)

    def __call__(self, raw: Any) -> Pod:
        spec = raw.get("spec") if type(raw) is dict else None
        meta = raw.get("metadata") if type(raw) is dict else None
        if type(spec) is not dict or type(meta) is not dict:
            return pod_from_dict(raw)  # it reports what is wrong
        uid = meta.get("uid")
        node_name = spec.pop("nodeName", None)
        try:
            known = self._pending.pop(uid, None) if type(uid) is str and uid else None
            if known is not None and (node_name is None or type(node_name) is str) and spec == known[0]:
                pod = _respec(known[1], raw, node_name or "")
            else:
                pod = None
        finally:
            if node_name is not None:
                spec["nodeName"] = node_name
        if pod is None:
            pod = pod_from_dict(raw)
        if not pod.node_name and type(uid) is str and uid:
            if len(self._pending) >= self._limit:
                self._pending.clear()
            if "nodeName" in spec:  # "" or null: compared without it, like the next event's spec
                spec = dict(spec)
                del spec["nodeName"]
            self._pending[uid] = (spec, pod)
        return pod


def _respec(old: Pod, raw: dict[str, Any], node_name: str) -> Pod | None:
    """``old`` with ``raw``'s metadata, status and ``node_name``: what :func:`pod_from_dict` gives
    for ``raw`` when its spec equals the one ``old`` was read from. None when the namespace or
    name differ (then the whole pod is read again)."""
    meta, status, namespace, name, obj = pod_header(raw)
    if namespace != old.namespace or name != old.name:
        return None
    values = list(pod_values(old))
    fresh = meta_status_values(meta, status, namespace, name, obj)
    for at, value in zip(_META_STATUS_AT, fresh, strict=True):
        values[at] = value
    values[_NODE_NAME_AT] = node_name
    return Pod(*values)


__all__ = ["DEFAULT_LIMIT", "PodDecoder"]
