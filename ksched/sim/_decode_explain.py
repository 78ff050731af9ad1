"""Why a body does not decode: the message ``sigs.k8s.io/json`` would give, found on refusal only.

The decoder walks the body in document order. A JSON value of the wrong kind for its Go type is an
``UnmarshalTypeError`` that is *saved* (the first one wins) while decoding goes on; its text names
the innermost struct being filled and the path of JSON field names from the root (map keys and list
indices are not part of it): ``json: cannot unmarshal string into Go struct field PodSpec.spec.priority
of type int32``. An integer that does not fit its Go type is reported as ``number <literal>``.

A type with its own ``UnmarshalJSON`` fails differently: the error *aborts* the decode and is
returned as it is, before any saved mismatch: ``resource.Quantity`` (``quantities must match the
regular expression ...``), ``intstr.IntOrString`` (whose int half is decoded by the standard library,
so ``json: cannot unmarshal bool into Go value of type int32``, without a field), ``v1.Time`` and
``v1.MicroTime`` (Go's ``time.Parse`` errors). A ``[]byte`` field takes standard base64, else the
saved error ``illegal base64 data at input byte N``.

Numbers are printed from the parsed value, so ``1e3`` in the body prints as ``1000.0`` where Go
would echo the literal.
"""

from __future__ import annotations

import binascii
import json
import re
from typing import Any

from ksched.errors import QuantityError
from ksched.model.quantity import parse_quantity
from ksched.sim import _decode_schema as ds
from ksched.sim._storage_validation import QUANTITY_REGEXP_ERROR

_RANGES = {ds.INT32: (-(2**31), 2**31 - 1), ds.INT64: (-(2**63), 2**63 - 1)}


class _Abort(Exception):
    """An ``UnmarshalJSON`` method failed: the decode stops with this message."""


def json_kind(value: Any) -> str:
    """How the decoder names a JSON value's kind in ``cannot unmarshal <kind>``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _number_text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


class _Walk:
    def __init__(self) -> None:
        self.saved: str | None = None
        self.struct = ""
        self.fields: list[str] = []

    def mismatch(self, value: str, go: str) -> None:
        if self.saved is not None:
            return
        if self.struct or self.fields:
            where = f"Go struct field {self.struct}.{'.'.join(self.fields)}"
        else:
            where = "Go value"
        self.saved = f"json: cannot unmarshal {value} into {where} of type {go}"

    def value(self, node: ds.Node, value: Any) -> None:
        if value is None:
            return
        kind = node.kind
        if kind == ds.STRUCT:
            self.struct_value(node, value)
        elif kind in (ds.MAP, ds.LIST):
            self.container(node, value)
        elif kind in _LEAF:
            _LEAF[kind](self, node, value)

    def struct_value(self, node: ds.Node, value: Any) -> None:
        if not isinstance(value, dict):
            self.mismatch(json_kind(value), node.go)
            return
        struct, depth = self.struct, len(self.fields)
        for key, x in value.items():
            sub = node.props.get(key)
            if sub is None:
                continue
            self.fields.append(key)
            self.struct = node.struct
            self.value(sub, x)
            del self.fields[depth:]
            self.struct = struct

    def container(self, node: ds.Node, value: Any) -> None:
        want = dict if node.kind == ds.MAP else list
        if not isinstance(value, want) or node.item is None:
            self.mismatch(json_kind(value), node.go)
            return
        for x in value.values() if isinstance(value, dict) else value:
            self.value(node.item, x)

    def scalar(self, node: ds.Node, value: Any) -> None:
        want: type | tuple[type, ...] = {ds.STRING: str, ds.BOOL: bool}.get(node.kind, (int, float))
        if not isinstance(value, want) or (want == (int, float) and isinstance(value, bool)):
            self.mismatch(json_kind(value), node.go)

    def integer(self, node: ds.Node, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.mismatch(json_kind(value), node.go)
            return
        low, high = _RANGES[node.kind]
        if isinstance(value, float) or not low <= value <= high:
            self.mismatch("number " + _number_text(value), node.go)

    def quantity(self, node: ds.Node, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise _Abort(QUANTITY_REGEXP_ERROR)
        try:
            parse_quantity(value)
        except QuantityError:
            raise _Abort(QUANTITY_REGEXP_ERROR) from None

    def int_or_string(self, node: ds.Node, value: Any) -> None:
        if isinstance(value, str):
            return
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = _RANGES[ds.INT32]
            if isinstance(value, int) and low <= value <= high:
                return
            raise _Abort(f"json: cannot unmarshal number {_number_text(value)} into Go value of type int32")
        raise _Abort(f"json: cannot unmarshal {json_kind(value)} into Go value of type int32")

    def timestamp(self, node: ds.Node, value: Any) -> None:
        if not isinstance(value, str):
            raise _Abort(f"json: cannot unmarshal {json_kind(value)} into Go value of type string")
        err = time_error(value, micro=node.kind == ds.MICRO_TIME)
        if err is not None:
            raise _Abort(err)

    def byte_string(self, node: ds.Node, value: Any) -> None:
        if not isinstance(value, str):
            self.mismatch(json_kind(value), node.go)
            return
        err = base64_error(value)
        if err is not None and self.saved is None:
            self.saved = err


_LEAF = {
    ds.STRING: _Walk.scalar,
    ds.BOOL: _Walk.scalar,
    ds.FLOAT64: _Walk.scalar,
    ds.INT32: _Walk.integer,
    ds.INT64: _Walk.integer,
    ds.QUANTITY: _Walk.quantity,
    ds.INT_OR_STRING: _Walk.int_or_string,
    ds.TIME: _Walk.timestamp,
    ds.MICRO_TIME: _Walk.timestamp,
    ds.BYTES: _Walk.byte_string,
}


def explain(node: ds.Node, obj: Any) -> str | None:
    """The decoder's error for ``obj`` as the kind ``node``; ``None`` if it decodes."""
    walk = _Walk()
    try:
        walk.value(node, obj)
    except _Abort as exc:
        return str(exc)
    return walk.saved


# -- Go's time.Parse, for RFC 3339 layouts --------------------------------------------------------

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _digits(s: str, n: int, fixed: bool) -> int:
    """How many leading digits Go's getnum takes (``n`` at most; fewer only if not ``fixed``); 0 = none."""
    got = 0
    while got < n and got < len(s) and s[got].isascii() and s[got].isdigit():
        got += 1
    if got == 0 or (fixed and got < n):
        return 0
    return got


_CLOCK = r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
_ZONE = r"(?:Z|[+-][0-9]{2}:[0-9]{2})"
_WELL_FORMED = (
    re.compile(_CLOCK + r"(?:[.,][0-9]+)?" + _ZONE),
    re.compile(_CLOCK + r"\.[0-9]{6}" + _ZONE),
)


def time_ok(value: str, *, micro: bool) -> bool:
    """Whether Go's ``time.Parse`` takes ``value``: a regular expression for the usual shape, the
    element-by-element parse (:func:`time_error`) for anything else."""
    m = _WELL_FORMED[micro].fullmatch(value)
    if m is None:
        return time_error(value, micro=micro) is None
    year, month, day, hour, minute, second = map(int, m.groups())
    if not (1 <= month <= 12 and hour < 24 and minute < 60 and second < 60):
        return False
    return 1 <= day <= _days_in(year, month)


def _days_in(year: int, month: int) -> int:
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return _MONTH_DAYS[month - 1]


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def time_error(value: str, *, micro: bool) -> str | None:
    """Go's ``time.Parse(RFC3339[Micro], value)`` error text, or ``None`` if it parses."""
    layout = RFC3339_MICRO if micro else RFC3339
    # (layout element, literal prefix before it, digits, fixed width, range name, low, high)
    steps = (
        ("2006", "", 4, True, "", 0, 9999),
        ("01", "-", 2, True, "month", 1, 12),
        ("02", "-", 2, True, "day", 1, 31),
        ("15", "T", 2, False, "hour", 0, 23),
        ("04", ":", 2, True, "minute", 0, 59),
        ("05", ":", 2, True, "second", 0, 59),
    )
    rest, parts = value, []

    def fail(value_elem: str, layout_elem: str) -> str:
        return (
            f"parsing time {_quote(value)} as {_quote(layout)}: "
            f"cannot parse {_quote(value_elem)} as {_quote(layout_elem)}"
        )

    for elem, prefix, n, fixed, name, low, high in steps:
        if not rest.startswith(prefix):
            return fail(rest, prefix)
        rest = rest[len(prefix) :]
        got = _digits(rest, n, fixed)
        if not got:
            return fail(rest, elem)
        number = int(rest[:got])
        if name and not low <= number <= high:
            return f"parsing time {_quote(value)}: {name} out of range"
        parts.append(number)
        rest = rest[got:]
    zone_error = _fraction_and_zone(value, rest, micro, fail)
    if zone_error is not None:
        return zone_error
    year, month, day = parts[0], parts[1], parts[2]
    if day > _days_in(year, month):
        return f"parsing time {_quote(value)}: day out of range"
    return None


def _fraction_and_zone(value: str, rest: str, micro: bool, fail: Any) -> str | None:
    """The seconds' fraction (Go accepts one the layout lacks) and the zone; then nothing more."""
    if micro:
        if not (rest.startswith(".") and _digits(rest[1:], 6, True)):
            return str(fail(rest, ".000000"))
        rest = rest[7:]
    if rest[:1] in (".", ",") and _digits(rest[1:], 1, False):
        rest = rest[1:]
        while rest[:1].isascii() and rest[:1].isdigit():
            rest = rest[1:]
    if rest.startswith("Z"):
        rest = rest[1:]
    elif (
        len(rest) >= 6
        and rest[0] in "+-"
        and rest[3] == ":"
        and _digits(rest[1:], 2, True)
        and _digits(rest[4:], 2, True)
    ):
        rest = rest[6:]
    else:
        return str(fail(rest, "Z07:00"))
    if rest:
        return f"parsing time {_quote(value)}: extra text: {_quote(rest)}"
    return None


def base64_error(value: str) -> str | None:
    """Go's ``base64.StdEncoding`` error text for ``value``, or ``None`` if it decodes."""
    try:
        binascii.a2b_base64(value.encode(), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        pass
    else:
        return None
    alphabet = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    data = value.encode("utf-8", "replace")
    for i, byte in enumerate(data):
        if byte not in alphabet and byte not in (10, 13):
            return f"illegal base64 data at input byte {i}"
    return f"illegal base64 data at input byte {len(data)}"
