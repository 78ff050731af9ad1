"""The JSON decoder's checks: a field of the wrong type, or an integer out of range, is a 400.

kube-apiserver decodes a body into Go structs before defaulting and validation; a value the decoder
cannot place (``spec: "hello"``, ``priority: 1e40``) is answered 400 BadRequest with the decoder's
message (``json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec``).

Two passes over the kind's Go types (:mod:`ksched.sim._decode_schema`):

* every write runs a **checker** compiled once per kind into closures that only answer "decodes or
  not" (no paths are built; a subtree that is the old object's own, ``is``-identical, is skipped, so
  a binding or a status patch pays for what it changed). A typical pod create costs ~10 µs;
* only a refused write runs the **explainer** (:mod:`ksched.sim._decode_explain`), which walks the
  way ``sigs.k8s.io/json`` does to find the decoder's message: the first type mismatch in document
  order, unless a type with its own ``UnmarshalJSON`` (quantities, int-or-string, times) fails, which
  aborts the decode and wins.

JSON ``null`` decodes into anything (the field keeps its zero value), as upstream's decoder does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ksched.errors import QuantityError
from ksched.model.quantity import parse_quantity
from ksched.sim import _decode_schema as ds
from ksched.sim import _status as st
from ksched.sim._decode_explain import base64_error, explain, time_ok
from ksched.sim._resources import ResourceType

Check = Callable[[Any, Any], None]
"""``check(value, old)``: raises :class:`_Refused` when ``value`` (not ``None``) would not decode."""

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_EMPTY: dict[str, Any] = {}


class _Refused(Exception):
    """Raised by a checker; the explainer then says why."""


class DecodeRefusal(st.StatusError):
    """The 400 of a body that does not decode; ``decoder_message`` is the decoder's own text.

    A patch handler answers the same failure as upstream's ``patch`` field error instead
    (:func:`ksched.sim._field_validation.patch_refusal`), from ``decoder_message``.
    """

    def __init__(self, rtype: ResourceType, decoder_message: str) -> None:
        k = rtype.kind
        super().__init__(
            400, f'{k} in version "{rtype.version}" cannot be handled as a {k}: {decoder_message}'
        )
        self.decoder_message = decoder_message


def check(rtype: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    """Raise :class:`DecodeRefusal` (400) if ``obj`` would not decode as ``rtype``'s Go type.

    ``old`` (an update's stored object) lets unchanged subtrees go unchecked.
    """
    checker = _kind_checker(rtype.group, rtype.version, rtype.kind)
    if checker is None:
        return
    try:
        checker(obj, old)
    except _Refused:
        node = ds.kind_node(rtype.group, rtype.version, rtype.kind)
        assert node is not None
        msg = explain(node, obj)
        if msg is not None:
            raise DecodeRefusal(rtype, msg) from None


def check_discarded(rtype: ResourceType, body: Any, cur: dict[str, Any], *, status_write: bool) -> None:
    """Decode-check what a write then drops: a main write's ``status``, a status write's other fields.

    Upstream decodes the whole body before its strategy resets those parts, so a wrong type there
    is a 400 all the same. Parts equal to the stored object's are skipped (they decode, as stored).
    """
    if not isinstance(body, dict):
        return
    if status_write:
        part = {k: v for k, v in body.items() if k != "status" and v != cur.get(k)}
    elif body.get("status") is not None and body["status"] != cur.get("status"):
        part = {"status": body["status"]}
    else:
        return
    if part:
        check(rtype, part)


@functools.cache
def _kind_checker(group: str, version: str, kind: str) -> Check | None:
    node = ds.kind_node(group, version, kind)
    return None if node is None else _Compiler().compile(node)


class _Compiler:
    """Node -> closure, memoised per node (shared types compile once; recursion is tied lazily)."""

    def __init__(self) -> None:
        self.done: dict[int, Check] = {}

    def compile(self, node: ds.Node) -> Check:
        found = self.done.get(id(node))
        if found is not None:
            return found
        if node.kind == ds.STRUCT:
            table: dict[str, Any] = {}
            self.done[id(node)] = _struct(table)
            for key, sub in node.props.items():
                table[key] = str if sub.kind == ds.STRING else self.compile(sub)
            return self.done[id(node)]
        made = self._other(node)
        self.done[id(node)] = made
        return made

    def _other(self, node: ds.Node) -> Check:
        kind, item = node.kind, node.item
        if kind == ds.MAP and item is not None:
            if item.kind == ds.STRING:
                return _string_map
            return _map(self.compile(item))
        if kind == ds.LIST and item is not None:
            return _list(self.compile(item))
        return _LEAVES.get(kind, _anything)


def _struct(table: dict[str, Any]) -> Check:
    get = table.get

    def check(value: Any, old: Any) -> None:
        if type(value) is not dict:
            raise _Refused
        prev = old if type(old) is dict else _EMPTY
        for key, x in value.items():
            c = get(key)
            if c is str:
                if type(x) is not str and x is not None:
                    raise _Refused
            elif c is not None and x is not None:
                y = prev.get(key)
                if y is not x:
                    c(x, y)

    return check


def _string_map(value: Any, old: Any) -> None:
    if type(value) is not dict:
        raise _Refused
    for x in value.values():
        if type(x) is not str and x is not None:
            raise _Refused


def _map(item: Check) -> Check:
    def check(value: Any, old: Any) -> None:
        if type(value) is not dict:
            raise _Refused
        prev = old if type(old) is dict else _EMPTY
        for key, x in value.items():
            if x is not None:
                y = prev.get(key)
                if y is not x:
                    item(x, y)

    return check


def _list(item: Check) -> Check:
    def check(value: Any, old: Any) -> None:
        if type(value) is not list:
            raise _Refused
        for x in value:
            if x is not None:
                item(x, None)

    return check


def _integer(low: int, high: int) -> Check:
    def check(value: Any, old: Any) -> None:
        if type(value) is not int or not low <= value <= high:
            raise _Refused

    return check


def _boolean(value: Any, old: Any) -> None:
    if type(value) is not bool:
        raise _Refused


def _number(value: Any, old: Any) -> None:
    if type(value) is not int and type(value) is not float:
        raise _Refused


def _quantity(value: Any, old: Any) -> None:
    if type(value) is str:
        if not _quantity_text_ok(value):
            raise _Refused
    elif type(value) is not int and type(value) is not float:
        raise _Refused


@functools.lru_cache(maxsize=4096)
def _quantity_text_ok(text: str) -> bool:
    """Whether ``text`` parses as a quantity; cached, as the same few amounts recur in every pod."""
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _int_or_string(value: Any, old: Any) -> None:
    if type(value) is not str and (type(value) is not int or not _INT32[0] <= value <= _INT32[1]):
        raise _Refused


def _timestamp(value: Any, old: Any) -> None:
    if type(value) is not str or not _timestamp_ok(value):
        raise _Refused


@functools.lru_cache(maxsize=1024)
def _timestamp_ok(text: str) -> bool:
    """Cached: a batch of writes shares its timestamps (one clock second)."""
    return time_ok(text, micro=False)


def _micro_timestamp(value: Any, old: Any) -> None:
    if type(value) is not str or not time_ok(value, micro=True):
        raise _Refused


def _bytes(value: Any, old: Any) -> None:
    if type(value) is not str or base64_error(value) is not None:
        raise _Refused


def _anything(value: Any, old: Any) -> None:
    """A type with its own decoder that takes any JSON (``RawExtension``, ``FieldsV1``)."""


def _string(value: Any, old: Any) -> None:
    if type(value) is not str:
        raise _Refused


_LEAVES: dict[str, Check] = {
    ds.STRING: _string,
    ds.BOOL: _boolean,
    ds.INT32: _integer(*_INT32),
    ds.INT64: _integer(*_INT64),
    ds.FLOAT64: _number,
    ds.QUANTITY: _quantity,
    ds.INT_OR_STRING: _int_or_string,
    ds.TIME: _timestamp,
    ds.MICRO_TIME: _micro_timestamp,
    ds.BYTES: _bytes,
}
