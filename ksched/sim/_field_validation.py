"""Server-side field validation of writes (``?fieldValidation=``), as kube-apiserver does it.

kube-apiserver decodes a written object into its Go type, so a field the type does not have cannot
be stored: it is dropped, and ``fieldValidation`` says what the client hears about it. ``Strict``
refuses the write (``strict decoding error: unknown field "spec.foo"``: 400 for a create or update,
422 on the ``patch`` field for a patch), ``Warn`` (the default)
answers with a ``Warning: 299`` header per field, ``Ignore`` says nothing. The sim's OpenAPI
documents declare the parameter, which makes kubectl leave validation of single objects to the
server; this module is what honours it. The types are upstream's definitions compiled once
(:mod:`ksched.sim._decode_schema`, shared with the decoder's type checks), walked the way the
decoder walks a struct: fields by name, map values, list elements; a type without fields
(``RawExtension``, ``FieldsV1``) takes anything.

Not covered: duplicate JSON keys (the JSON parser keeps the last one before this sees the body).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ksched.sim import _decode_schema as ds
from ksched.sim import _decode_types as decode_types
from ksched.sim import _status as st
from ksched.sim._patch import STRATEGIC
from ksched.sim._resources import ResourceType

DIRECTIVES = ("Ignore", "Strict", "Warn")


def _walk(node: ds.Node, value: Any, path: str, out: list[str]) -> None:
    """Collect the unknown fields under ``value`` into ``out`` and drop them from it."""
    if isinstance(value, dict):
        if node.kind == ds.STRUCT:
            props = node.props
            for key in list(value):
                sub = f"{path}.{key}" if path else key
                if key in props:
                    _walk(props[key], value[key], sub, out)
                else:
                    out.append(sub)
                    del value[key]
        elif node.kind == ds.MAP and node.item is not None:
            for key, item in value.items():
                _walk(node.item, item, f"{path}[{key}]", out)
    elif isinstance(value, list) and node.kind == ds.LIST and node.item is not None:
        for i, item in enumerate(value):
            _walk(node.item, item, f"{path}[{i}]", out)


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


Refusal = Callable[[str], st.StatusError]
"""Builds the Strict-mode error from the joined ``unknown field "..."`` texts."""


def decode_refusal(rtype: ResourceType) -> Refusal:
    """Create and update: the body fails to decode (``handlers/create.go``, ``transformDecodeError``)."""
    k = rtype.kind
    return lambda msg: st.bad_request(f'{k} in version "{rtype.version}" cannot be handled as a {k}: {msg}')


def patch_refusal(content_type: str, patch: Any, patched: Any) -> Refusal:
    """Patches: ``handlers/patch.go`` reports the failure as an invalid ``patch`` field whose value is
    the patch for a strategic merge patch (Go's ``%+v`` of it) and the patched object otherwise."""

    def refuse(msg: str) -> st.StatusError:
        smp = content_type.split(";")[0].strip() == STRATEGIC
        value = _go_format(patch) if smp else orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode()
        detail = f"Invalid value: {orjson.dumps(value).decode()}: {msg}"
        return st.invalid_fields("", "", "", [("FieldValueInvalid", "patch", detail)])

    return refuse


def _go_format(value: Any) -> str:
    """Go's ``fmt.Sprintf("%+v", v)`` of a decoded JSON value (maps print with sorted keys)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_format(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def check(rtype: ResourceType, obj: Any, mode: str, refuse: Refusal | None = None) -> dict[str, str]:
    """Drop ``obj``'s unknown fields (in place) and apply ``mode`` to them.

    Returns the response headers that carry the warnings (``Warn``); under ``Strict`` raises
    ``refuse``'s error (:func:`decode_refusal`'s when not given: the body of a create or update).
    """
    node = ds.kind_node(rtype.group, rtype.version, rtype.kind)
    if node is None or not isinstance(obj, dict):
        return {}
    unknown: list[str] = []
    _walk(node, obj, "", unknown)
    if not unknown or mode == "Ignore":
        return {}
    fields = [f'unknown field "{f}"' for f in unknown]
    if mode == "Strict":
        refusal = refuse or decode_refusal(rtype)
        try:  # a wrong type is fatal to the decoder; unknown fields only count when it decodes
            decode_types.check(rtype, obj)
        except decode_types.DecodeRefusal as exc:
            raise refusal(exc.decoder_message) from None
        raise refusal("strict decoding error: " + ", ".join(fields))
    return {"Warning": ", ".join('299 - "' + f.replace('"', '\\"') + '"' for f in fields)}
