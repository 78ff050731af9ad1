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

import orjson

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

DEFAULT_LIMIT = 50_000
"""Pending pods remembered at most (a few hundred bytes each); beyond this the memory starts over
(a cost, never a mistake)."""


class PodDecoder:
    """:func:`pod_from_dict` with a memory of pending pods' specs (one decoder per informer: it is
    not thread-safe, and the informer calls it from one thread).

    A pod's spec is remembered while it has no ``nodeName`` and forgotten by the event that binds
    it, as its JSON text without ``nodeName`` (a few hundred bytes; the parsed dicts would take
    several times that). Only a byte-identical spec of the same namespace and name is reused: an
    API server writes one object's fields in one order, and any other difference (even ``1`` for
    ``1.0``) just means a full read.
    """

    __slots__ = ("_limit", "_pending")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._pending: dict[str, tuple[bytes, Pod]] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._pending)

    def __call__(self, raw: Any) -> Pod:
        spec = raw.get("spec") if type(raw) is dict else None
        meta = raw.get("metadata") if type(raw) is dict else None
        if type(spec) is not dict or type(meta) is not dict:
            return pod_from_dict(raw)  # it reports what is wrong
        uid = meta.get("uid")
        if type(uid) is not str or not uid:
            return pod_from_dict(raw)
        node_name = spec.pop("nodeName", None)
        try:
            text = orjson.dumps(spec)
        except (TypeError, orjson.JSONEncodeError):  # not JSON: only a full read can say why
            text = None
        finally:
            if node_name is not None:
                spec["nodeName"] = node_name
        known = self._pending.pop(uid, None)
        pod = None
        if known is not None and text == known[0] and (node_name is None or type(node_name) is str):
            pod = _respec(known[1], raw, node_name or "")
        if pod is None:
            pod = pod_from_dict(raw)
        if not pod.node_name and text is not None:
            if len(self._pending) >= self._limit:
                self._pending.clear()
            self._pending[uid] = (text, pod)
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
