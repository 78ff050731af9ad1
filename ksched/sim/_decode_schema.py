"""The served kinds' Go types, as the JSON decoder sees them, compiled once from upstream's OpenAPI.

kube-apiserver decodes a body into Go structs; what it refuses or drops depends only on the shape of
those structs. Two checks walk that shape: unknown fields (:mod:`ksched.sim._field_validation`) and
wrong JSON types (:mod:`ksched.sim._decode_types`). Both walk the :class:`Node` tree built here, so
the definitions (:mod:`ksched.sim._openapi`) are resolved once per process, not per write.

A node's ``go`` is the Go type's name as the decoder prints it (``v1.PodSpec``, ``[]v1.Container``,
``map[string]string``); ``struct`` is the bare struct name the decoder puts before a field path
(``PodSpec`` in ``Go struct field PodSpec.spec.priority``). Not recovered from OpenAPI: named string
types (``v1.RestartPolicy`` prints as ``string``), and maps of quantities other than
``v1.ResourceList``.
"""

from __future__ import annotations

import functools
from typing import Any

from ksched.sim import _openapi as oa

STRUCT, MAP, LIST, ANY = "struct", "map", "list", "any"
STRING, BOOL, INT32, INT64, FLOAT64, BYTES = "string", "bool", "int32", "int64", "float64", "bytes"
QUANTITY, INT_OR_STRING, TIME, MICRO_TIME = "quantity", "intstr", "time", "microtime"

_SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": (QUANTITY, "resource.Quantity"),
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": (INT_OR_STRING, "intstr.IntOrString"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": (TIME, "v1.Time"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": (MICRO_TIME, "v1.MicroTime"),
}
_PRIMITIVE_GO = {STRING: "string", BOOL: "bool", INT32: "int32", INT64: "int64", BYTES: "[]uint8"}


class Node:
    """One Go type: its decoder kind, printed name, fields (structs) and element (maps, lists)."""

    __slots__ = ("go", "item", "kind", "props", "struct")

    def __init__(self, kind: str, go: str, struct: str = "") -> None:
        self.kind = kind
        self.go = go
        self.struct = struct
        self.props: dict[str, Node] = {}
        self.item: Node | None = None


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


class _Compiler:
    """Builds nodes, one per definition (shared, which also ties recursive types)."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.named: dict[str, Node] = {}

    def definition(self, name: str) -> Node:
        node = self.named.get(name)
        if node is not None:
            return node
        if name in _SPECIAL:
            kind, go = _SPECIAL[name]
            node = self.named[name] = Node(kind, go)
            return node
        schema = self.defs[name]
        short = name.rsplit(".", 1)[-1]
        package = name.rsplit(".", 2)[-2]
        if schema.get("type") == "object" and "properties" in schema:
            node = self.named[name] = Node(STRUCT, f"{package}.{short}", short)
            node.props = {k: self.schema(v) for k, v in schema["properties"].items()}
            return node
        node = self.named[name] = self.schema(schema)
        return node

    def schema(self, schema: dict[str, Any]) -> Node:
        name = _ref_name(schema)
        if name is not None:
            return self.definition(name)
        typ, fmt = schema.get("type"), schema.get("format")
        if typ == "array" and isinstance(schema.get("items"), dict):
            item = self.schema(schema["items"])
            node = Node(LIST, "[]" + item.go)
            node.item = item
            return node
        if typ == "object":
            extra = schema.get("additionalProperties")
            if not isinstance(extra, dict):
                return Node(ANY, "")
            item = self.schema(extra)
            node = Node(MAP, "v1.ResourceList" if item.kind == QUANTITY else "map[string]" + item.go)
            node.item = item
            return node
        if typ == "string":
            kind = BYTES if fmt == "byte" else STRING
            return Node(kind, _PRIMITIVE_GO[kind])
        if typ == "boolean":
            return Node(BOOL, "bool")
        if typ == "integer":
            kind = INT32 if fmt == "int32" else INT64
            return Node(kind, kind)
        if typ == "number":
            return Node(FLOAT64, "float64")
        return Node(ANY, "")


@functools.cache
def kind_node(group: str, version: str, kind: str) -> Node | None:
    """The struct node of a served kind (``None`` for a kind upstream's definitions lack)."""
    name = oa.by_gvk().get((group, version, kind))
    if name is None:
        return None
    return _compiler().definition(name)


@functools.cache
def _compiler() -> _Compiler:
    return _Compiler(oa.definitions())
