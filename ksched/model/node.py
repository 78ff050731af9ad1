"""Compact Node records built from raw API JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ksched.errors import ObjectError, describe_object
from ksched.model import _fields as f
from ksched.model import _shared as shared
from ksched.model.quantity import canonical_value, keep_value, known_value
from ksched.model.selectors import Taint, parse_taint


@dataclass(frozen=True, slots=True)
class NodeImage:
    """One entry of ``status.images``: every name the image goes by, and its size in bytes."""

    names: tuple[str, ...]
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Node:
    """What the scheduler knows of one node. Immutable: an update builds a new record."""

    name: str
    uid: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    """Canonical units per resource, including ``pods``; capacity stands in when absent."""
    taints: tuple[Taint, ...]
    unschedulable: bool
    images: tuple[NodeImage, ...]
    conditions: tuple[tuple[str, str], ...] = ()
    """``(type, status)`` of each ``status.conditions`` entry: what upstream compares to derive
    ``UpdateNodeCondition`` (heartbeat times change on every kubelet report and do not count)."""
    annotations_key: int = 0
    """A fingerprint of ``metadata.annotations``, enough to derive ``UpdateNodeAnnotation``
    without keeping every node's annotations (no in-tree plugin reads them)."""

    @property
    def described(self) -> str:
        return describe_object("Node", None, self.name)


def node_from_dict(raw: Any) -> Node:
    """Build a :class:`Node` from API JSON; raise :class:`ObjectError` naming the bad field."""
    top = f.mapping(raw, "Node", "")
    meta = f.mapping(top.get("metadata"), "Node", "metadata")
    name = f.string(meta.get("name"), "Node", "metadata.name")
    obj = describe_object("Node", None, name)
    if not name:
        raise ObjectError(obj, "metadata.name", "a node needs a name")
    spec = f.mapping(top.get("spec"), obj, "spec")
    status = f.mapping(top.get("status"), obj, "status")
    source = "status.allocatable"
    alloc_raw = f.mapping(status.get("allocatable"), obj, source)
    if not alloc_raw:
        source = "status.capacity"
        alloc_raw = f.mapping(status.get("capacity"), obj, source)
    allocatable = {rname: _allocatable(rname, q, obj, source) for rname, q in alloc_raw.items()}
    images = []
    for i, img in enumerate(f.sequence(status.get("images"), obj, "status.images")):
        im = f.mapping(img, obj, f"status.images[{i}]")
        names = tuple(
            f.string(n, obj, f"status.images[{i}].names[{j}]")
            for j, n in enumerate(f.sequence(im.get("names"), obj, f"status.images[{i}].names"))
        )
        size = f.integer(im.get("sizeBytes"), obj, f"status.images[{i}].sizeBytes", lo=0)
        images.append(NodeImage(names, size))
    return Node(
        name=shared.text(name),
        uid=f.string(meta.get("uid"), obj, "metadata.uid") or name,
        labels=shared.interned_values(f.string_map(meta.get("labels"), obj, "metadata.labels")),
        allocatable=shared.int_map(allocatable),
        taints=shared.value(
            tuple(
                parse_taint(t, obj, f"spec.taints[{i}]")
                for i, t in enumerate(f.sequence(spec.get("taints"), obj, "spec.taints"))
            )
        ),
        unschedulable=f.boolean(spec.get("unschedulable"), obj, "spec.unschedulable"),
        images=shared.value(tuple(images)),
        conditions=shared.value(_conditions(status, obj)),
        annotations_key=_fingerprint(f.string_map(meta.get("annotations"), obj, "metadata.annotations")),
    )


def _fingerprint(annotations: Mapping[str, str]) -> int:
    return hash(tuple(sorted(annotations.items()))) if annotations else 0


def _allocatable(rname: str, q: Any, obj: str, source: str) -> int:
    """:func:`canonical_value` of ``<source>.<rname>``, remembered for text values (a pool's nodes
    repeat the same few); the field path is built only when a value is parsed."""
    found = known_value(rname, q)
    if found is not None:
        return found
    return keep_value(rname, q, canonical_value(rname, q, obj=obj, field=f"{source}.{rname}"))


def _conditions(status: Mapping[str, Any], obj: str) -> tuple[tuple[str, str], ...]:
    """(type, status) of each condition. The common shape (a list of objects whose type and status
    are strings) is read without building a field path; anything else takes :func:`_checked_conditions`,
    which names what is wrong."""
    raw = status.get("conditions")
    if type(raw) is not list:
        return _checked_conditions(status, obj)
    out = []
    for c in raw:
        kind, state = (c.get("type"), c.get("status")) if type(c) is dict else (None, None)
        if type(kind) is not str or type(state) is not str:
            return _checked_conditions(status, obj)
        out.append((kind, state))
    return tuple(out)


def _checked_conditions(status: Mapping[str, Any], obj: str) -> tuple[tuple[str, str], ...]:
    out = []
    for i, raw in enumerate(f.sequence(status.get("conditions"), obj, "status.conditions")):
        cond = f.mapping(raw, obj, f"status.conditions[{i}]")
        out.append(
            (
                f.string(cond.get("type"), obj, f"status.conditions[{i}].type"),
                f.string(cond.get("status"), obj, f"status.conditions[{i}].status"),
            )
        )
    return tuple(out)
