"""A Swagger 2.0 document as the protobuf kubectl asks for (``openapi.v2.Document`` of gnostic).

client-go's ``OpenAPISchema`` asks ``/openapi/v2`` for
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and accepts nothing else: it
``proto.Unmarshal``\\ s the body, so a JSON answer fails and an error status fails validation.
kube-apiserver answers with gnostic's ``OpenAPIv2.proto`` messages, and so does this module.

It writes the protobuf wire format directly (varints and length-delimited fields; no other wire
type occurs) for the messages and fields the sim's document uses, with gnostic's field numbers.
That is a few dozen lines, where the ``protobuf`` runtime would still need gnostic's descriptors
compiled in. A key it has no field for raises ``ValueError``: nothing is dropped unseen. Values of
``default``, ``enum``, ``example`` and ``x-`` extensions are ``Any`` messages carrying YAML, as
gnostic writes them; JSON is YAML, and kube-openapi parses them with a YAML decoder.
"""

from __future__ import annotations

from typing import Any

import orjson

Fields = dict[str, tuple[int, str]]
"""Swagger key -> (field number, how to encode): ``str``, ``strs``, ``bool``, ``any``, ``anys`` or a
message encoder's name in :data:`_ENCODERS`."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _str(number: int, value: str) -> bytes:
    return _field(number, value.encode())


def _any(value: Any) -> bytes:
    """gnostic's ``Any``: field 2 holds the value as YAML text."""
    return _str(2, orjson.dumps(value).decode())


def _named(name: str, payload: bytes) -> bytes:
    """A ``Named*`` pair message: name = 1, value = 2."""
    return _str(1, name) + _field(2, payload)


def _message(obj: dict[str, Any], fields: Fields, extensions: int | None, what: str) -> bytes:
    out = bytearray()
    for key, value in obj.items():
        if key.startswith("x-") and extensions is not None:
            out += _field(extensions, _named(key, _any(value)))
            continue
        if key not in fields:
            raise ValueError(f"{what}: no protobuf field for {key!r}")
        number, how = fields[key]
        if how == "str":
            out += _str(number, value)
        elif how == "strs":
            out += b"".join(_str(number, v) for v in value)
        elif how == "bool":
            out += _varint(number << 3) + _varint(1 if value else 0)
        elif how == "any":
            out += _field(number, _any(value))
        elif how == "anys":
            out += b"".join(_field(number, _any(v)) for v in value)
        else:
            out += _ENCODERS[how](number, value)
    return bytes(out)


_SCHEMA: Fields = {
    "$ref": (1, "str"),
    "format": (2, "str"),
    "title": (3, "str"),
    "description": (4, "str"),
    "default": (5, "any"),
    "required": (19, "strs"),
    "enum": (20, "anys"),
    "additionalProperties": (21, "additional"),
    "type": (22, "type"),
    "items": (23, "items"),
    "allOf": (24, "schemas"),
    "properties": (25, "properties"),
    "discriminator": (26, "str"),
    "readOnly": (27, "bool"),
    "example": (30, "any"),
}


def schema(obj: dict[str, Any]) -> bytes:
    """``Schema`` (vendor extensions are field 31)."""
    return _message(obj, _SCHEMA, 31, "schema")


def _schema_field(number: int, value: dict[str, Any]) -> bytes:
    return _field(number, schema(value))


def _schemas(number: int, value: list[dict[str, Any]]) -> bytes:
    return b"".join(_field(number, schema(v)) for v in value)


def _additional(number: int, value: Any) -> bytes:
    """``AdditionalPropertiesItem``: a schema (1) or a boolean (2)."""
    if isinstance(value, bool):
        return _field(number, _varint(2 << 3) + _varint(int(value)))
    return _field(number, _field(1, schema(value)))


def _type(number: int, value: str | list[str]) -> bytes:
    """``TypeItem``: repeated string value = 1."""
    values = [value] if isinstance(value, str) else value
    return _field(number, b"".join(_str(1, v) for v in values))


def _items(number: int, value: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    """``ItemsItem``: repeated Schema = 1."""
    values = [value] if isinstance(value, dict) else value
    return _field(number, b"".join(_field(1, schema(v)) for v in values))


def _properties(number: int, value: dict[str, dict[str, Any]]) -> bytes:
    """``Properties`` (and ``Definitions``): repeated NamedSchema = 1."""
    return _field(number, b"".join(_field(1, _named(k, schema(v))) for k, v in value.items()))


_NON_BODY: Fields = {
    "required": (1, "bool"),
    "in": (2, "str"),
    "description": (3, "str"),
    "name": (4, "str"),
    "uniqueItems": (20, "bool"),
}
_QUERY: Fields = {**_NON_BODY, "type": (6, "str")}
_PATH: Fields = {**_NON_BODY, "type": (5, "str"), "uniqueItems": (19, "bool")}
_BODY: Fields = {
    "description": (1, "str"),
    "name": (2, "str"),
    "in": (3, "str"),
    "required": (4, "bool"),
    "schema": (5, "schema"),
}


def _parameters(number: int, value: list[dict[str, Any]]) -> bytes:
    """repeated ``ParametersItem`` -> ``Parameter``: a body parameter (1) or a non-body one (2),
    itself a query (3) or path (4) sub-schema."""
    out = bytearray()
    for p in value:
        if p["in"] == "body":
            param = _field(1, _message(p, _BODY, 6, "body parameter"))
        elif p["in"] == "query":
            param = _field(2, _field(3, _message(p, _QUERY, 23, "query parameter")))
        elif p["in"] == "path":
            param = _field(2, _field(4, _message(p, _PATH, 22, "path parameter")))
        else:
            raise ValueError(f"parameter {p['name']!r}: no protobuf message for 'in: {p['in']}'")
        out += _field(number, _field(1, param))
    return bytes(out)


_RESPONSE: Fields = {"description": (1, "str"), "schema": (2, "schema_item")}


def _schema_item(number: int, value: dict[str, Any]) -> bytes:
    """``SchemaItem``: a Schema (1)."""
    return _field(number, _field(1, schema(value)))


def _responses(number: int, value: dict[str, dict[str, Any]]) -> bytes:
    """``Responses``: repeated NamedResponseValue = 1 -> ``ResponseValue``: a Response (1)."""
    codes = b"".join(
        _field(1, _named(code, _field(1, _message(r, _RESPONSE, 5, "response")))) for code, r in value.items()
    )
    return _field(number, codes)


_OPERATION: Fields = {
    "tags": (1, "strs"),
    "description": (3, "str"),
    "operationId": (5, "str"),
    "produces": (6, "strs"),
    "consumes": (7, "strs"),
    "parameters": (8, "parameters"),
    "responses": (9, "responses"),
    "schemes": (10, "strs"),
}
_PATH_ITEM: Fields = {
    "$ref": (1, "str"),
    "get": (2, "operation"),
    "put": (3, "operation"),
    "post": (4, "operation"),
    "delete": (5, "operation"),
    "patch": (8, "operation"),
    "parameters": (9, "parameters"),
}


def _operation(number: int, value: dict[str, Any]) -> bytes:
    return _field(number, _message(value, _OPERATION, 13, "operation"))


def _paths(number: int, value: dict[str, dict[str, Any]]) -> bytes:
    """``Paths``: repeated NamedPathItem = 2."""
    items = b"".join(_field(2, _named(p, _message(i, _PATH_ITEM, 10, p))) for p, i in value.items())
    return _field(number, items)


_INFO: Fields = {"title": (1, "str"), "version": (2, "str"), "description": (3, "str")}


def _info(number: int, value: dict[str, Any]) -> bytes:
    return _field(number, _message(value, _INFO, 7, "info"))


_DOCUMENT: Fields = {
    "swagger": (1, "str"),
    "info": (2, "info"),
    "host": (3, "str"),
    "basePath": (4, "str"),
    "schemes": (5, "strs"),
    "consumes": (6, "strs"),
    "produces": (7, "strs"),
    "paths": (8, "paths"),
    "definitions": (9, "properties"),
}

_ENCODERS = {
    "schema": _schema_field,
    "schemas": _schemas,
    "additional": _additional,
    "type": _type,
    "items": _items,
    "properties": _properties,
    "parameters": _parameters,
    "schema_item": _schema_item,
    "responses": _responses,
    "operation": _operation,
    "paths": _paths,
    "info": _info,
}


def document(doc: dict[str, Any]) -> bytes:
    """The whole ``Document`` (vendor extensions are field 16)."""
    return _message(doc, _DOCUMENT, 16, "document")
