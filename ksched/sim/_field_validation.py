"""Server-side field validation of writes (``?fieldValidation=``), as kube-apiserver does it.

kube-apiserver decodes a written object into its Go type, so a field the type does not have cannot
be stored: it is dropped, and ``fieldValidation`` says what the client hears about it. ``Strict``
refuses the write (400, ``strict decoding error: unknown field "spec.foo"``), ``Warn`` (the default)
answers with a ``Warning: 299`` header per field, ``Ignore`` says nothing. The sim's OpenAPI
documents declare the parameter, which makes kubectl leave validation of single objects to the
server; this module is what honours it. The types are upstream's definitions
(:mod:`ksched.sim._openapi`), walked the way the decoder walks a struct: object properties by
name, ``additionalProperties`` for map values, ``items`` for list elements; a schema without
properties (``RawExtension``, ``FieldsV1``) takes anything.

Not covered: duplicate JSON keys (the JSON parser keeps the last one before this sees the body).
"""

from __future__ import annotations

from typing import Any

from ksched.sim import _openapi as oa
from ksched.sim import _status as st
from ksched.sim._resources import ResourceType

DIRECTIVES = ("Ignore", "Strict", "Warn")


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _walk(schema: dict[str, Any], value: Any, path: str, defs: dict[str, Any], out: list[str]) -> None:
    """Collect the unknown fields under ``value`` into ``out`` and drop them from it."""
    schema = _resolve(schema, defs)
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None:
            for key in list(value):
                sub = f"{path}.{key}" if path else key
                if key in props:
                    _walk(props[key], value[key], sub, defs, out)
                else:
                    out.append(sub)
                    del value[key]
        elif isinstance(schema.get("additionalProperties"), dict):
            for key, item in value.items():
                _walk(schema["additionalProperties"], item, f"{path}[{key}]", defs, out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(schema["items"], item, f"{path}[{i}]", defs, out)


def directive(query: dict[str, str], options_kind: str) -> str:
    """The request's ``fieldValidation``; ``Warn`` when absent, as upstream defaults it."""
    value = query.get("fieldValidation", "") or "Warn"
    if value not in DIRECTIVES:
        supported = ", ".join(f'"{d}"' for d in DIRECTIVES)
        msg = (
            f'{options_kind}.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "{value}": '
            f"supported values: {supported}"
        )
        raise st.StatusError(422, msg, reason="Invalid")
    return value


def check(rtype: ResourceType, obj: Any, mode: str, *, decoding: bool) -> dict[str, str]:
    """Drop ``obj``'s unknown fields (in place) and apply ``mode`` to them.

    Returns the response headers that carry the warnings (``Warn``). Under ``Strict`` raises 400:
    worded as a failed decode of the body (``decoding``: create, update) or of the patched object.
    """
    defs = oa.definitions()
    name = oa.by_gvk().get((rtype.group, rtype.version, rtype.kind))
    if name is None or not isinstance(obj, dict):
        return {}
    unknown: list[str] = []
    _walk(defs[name], obj, "", defs, unknown)
    if not unknown or mode == "Ignore":
        return {}
    fields = [f'unknown field "{f}"' for f in unknown]
    if mode == "Strict":
        msg = "strict decoding error: " + ", ".join(fields)
        if decoding:
            k = rtype.kind
            msg = f'{k} in version "{rtype.version}" cannot be handled as a {k}: {msg}'
        raise st.bad_request(msg)
    return {"Warning": ", ".join('299 - "' + f.replace('"', '\\"') + '"' for f in fields)}
