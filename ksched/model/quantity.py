"""Exact parsing of Kubernetes ``resource.Quantity`` strings.

Follows upstream ``k8s.io/apimachinery/pkg/api/resource`` (``quantity.go``: ``ParseQuantity``,
``parseQuantityString``, ``Value``, ``MilliValue``; ``suffix.go``; test tables from
``quantity_test.go`` ``TestQuantityParse``), re-implemented here, not translated.

Why exact arithmetic: upstream never uses floating point. It rounds every non-zero value *up*
(away from zero) to a whole nano at parse time, and ``Value()``/``MilliValue()`` round up again.
So ``"0.1m"`` of cpu is 1 millicore and ``"100m"`` of memory is 1 byte. A float would turn
``"0.3"`` into 0.299999... or 0.300000...01 and place pods differently from kube-scheduler. A
parsed quantity is therefore held as an integer count of nano units (``10**-9``), which is exactly
the precision upstream keeps, and exposed as a :class:`fractions.Fraction`.

Grammar (upstream's, case-sensitive, no whitespace anywhere)::

    quantity ::= [+-] number suffix
    number   ::= digits | digits "." | digits "." digits | "." digits
    suffix   ::= "" | n | u | m | k | M | G | T | P | E        (decimal SI)
               | Ki | Mi | Gi | Ti | Pi | Ei                   (binary SI)
               | (e | E) [+-] digits                           (decimal exponent)

Upstream behaviour kept on purpose:

* binary-SI values larger than 2**63-1 are *capped* to 2**63-1 (``"9Ei"``), decimal ones are not
  (``"12E"`` is 12*10**18); the ``parse_*``/``canonical_value`` helpers reject anything whose
  canonical integer does not fit an int64;
* negative values round away from zero (``-1.5`` -> ``Value()`` -2), as upstream's int64 path does.

Deliberate differences (all reject input upstream would accept):

* at least one digit is required; upstream reads ``"."``, ``"+"``, ``"Ki"``, ``"m"`` or ``"e3"`` as 0;
* a decimal exponent must lie within +-(2**31-1) (newer upstream rejects those too; older releases
  silently truncated the exponent to 32 bits);
* values of 10**40 or more are rejected as too large (upstream keeps them in an unbounded decimal),
  so that no input can make the parser allocate huge integers.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from ksched.bounded import preview
from ksched.errors import QuantityError

__all__ = [
    "INT64_MAX",
    "canonical_value",
    "parse_bytes",
    "parse_count",
    "parse_cpu_millis",
    "parse_quantity",
    "to_milli",
    "to_units",
]

INT64_MAX = 2**63 - 1
_NANO = 10**9
_MILLI_IN_NANO = 10**6
# Largest magnitude parse_quantity accepts, as a number of decimal digits of the integer part.
_MAX_DIGITS = 40
_BINARY_CAP_NANO = INT64_MAX * _NANO  # upstream caps binary-SI values at 2**63-1
_MAX_EXPONENT = 2**31 - 1
# With binary suffixes (at most 2**60) the fraction digits beyond this position can only matter
# through whether any of them is non-zero (see _binary_to_nano).
_BINARY_FRACTION_DIGITS = 70

_DECIMAL_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXP = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# Value of "1<suffix>" in nano units: the fast path's whole arithmetic.
_DECIMAL_NANO = {s: 10 ** (e + 9) for s, e in _DECIMAL_EXP.items()}
_BINARY_NANO = {s: (1 << e) * _NANO for s, e in _BINARY_EXP.items()}
_SUFFIXES = (*_DECIMAL_EXP, *_BINARY_EXP)
_FAST_MAX_DIGITS = 18  # < 10**18 * 10**27 nano: far below the 10**40 limit, no check needed

_GRAMMAR = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:[eE](?P<exp>[+-]?[0-9]+)|(?P<suffix>[KMGTPE]i|[numkMGTPE])?)"
)
_SHAPE = "expected [+-]<digits>[.<digits>] then one of n u m k M G T P E Ki Mi Gi Ti Pi Ei or e<int>"


class _Invalid(ValueError):
    """Internal: why a text is not a quantity; turned into QuantityError with obj/field."""


# --- parsing -----------------------------------------------------------------------------------


def _fast_nano(text: str) -> int | None:
    """``[+-]<digits><SI suffix>`` with a short integer: exact nano value, or None to fall back."""
    body = text
    negative = False
    if body[:1] in ("-", "+"):
        negative = body[0] == "-"
        body = body[1:]
    if body[-2:] in _BINARY_NANO:
        digits, mult, binary = body[:-2], _BINARY_NANO[body[-2:]], True
    elif body[-1:] in _DECIMAL_NANO:
        digits, mult, binary = body[:-1], _DECIMAL_NANO[body[-1:]], False
    else:
        digits, mult, binary = body, _NANO, False
    if not digits or len(digits) > _FAST_MAX_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    nano = int(digits) * mult
    if binary and nano > _BINARY_CAP_NANO:
        nano = _BINARY_CAP_NANO
    return -nano if negative else nano


def _decimal_to_nano(digits: str, shift: int) -> int:
    """``int(digits) * 10**(shift - 9)`` in nano units, rounded up; ``digits`` has no leading 0."""
    if len(digits) + shift - 9 > _MAX_DIGITS:
        raise _Invalid(f"too large: magnitude must be below 10^{_MAX_DIGITS}")
    if shift >= 0:
        return int(digits) * 10**shift
    cut = len(digits) + shift  # digits that are whole nanos
    if cut <= 0:
        return 1  # non-zero but below one nano
    return int(digits[:cut]) + (1 if digits[cut:].strip("0") else 0)


def _binary_to_nano(int_digits: str, frac: str, power: int) -> int:
    """``int_digits.frac * 2**power`` in nano units, rounded up and capped at 2**63-1 units."""
    int_digits = int_digits.lstrip("0")
    if len(int_digits) > 20:  # >= 10**20 > 2**63: capped whatever the rest says
        return _BINARY_CAP_NANO
    if len(frac) > _BINARY_FRACTION_DIGITS:
        # Replace the tail by one sticky digit. With N kept digits the truncated value times
        # 2**power * 10**9 is a multiple of 1/(5**(N-9) * 2**(N-9-power)) and the tail adds less
        # than that step, so the ceiling is unchanged as long as N - 9 >= power (60).
        sticky = "1" if frac[_BINARY_FRACTION_DIGITS:].strip("0") else "0"
        frac = frac[:_BINARY_FRACTION_DIGITS] + sticky
    scaled = int(int_digits + frac or "0") * (1 << power) * _NANO
    nano = -(-scaled // 10 ** len(frac))
    return min(nano, _BINARY_CAP_NANO)


def _slow_nano(text: str) -> int:
    m = _GRAMMAR.fullmatch(text) if text else None
    if m is None:
        raise _Invalid(_explain(text))
    int_digits, frac = m["int"], m["frac"] or ""
    if not int_digits and not frac:
        raise _Invalid("no digits")
    if m["exp"] is not None:
        exp_text = m["exp"].lstrip("+-").lstrip("0")
        if len(exp_text) > 10 or int(exp_text or "0") > _MAX_EXPONENT:
            raise _Invalid(f"exponent out of range (limit is +-{_MAX_EXPONENT})")
        exponent = int(m["exp"])
        binary_power = None
    elif (suffix := m["suffix"] or "") in _BINARY_EXP:
        exponent, binary_power = 0, _BINARY_EXP[suffix]
    else:
        exponent, binary_power = _DECIMAL_EXP[suffix], None

    if binary_power is not None:
        nano = _binary_to_nano(int_digits, frac, binary_power)
    else:
        digits = (int_digits + frac).lstrip("0")
        nano = _decimal_to_nano(digits, exponent - len(frac) + 9) if digits else 0
    return -nano if m["sign"] == "-" else nano


def _explain(text: str) -> str:
    """A readable reason for a text that does not match the grammar."""
    if not text:
        return "empty string"
    if any(c.isspace() for c in text):
        return "whitespace is not allowed"
    body = text[1:] if text[0] in "+-" else text
    tail = body.lstrip("0123456789.")
    number = body[: len(body) - len(tail)]
    if number.count(".") > 1:
        return "more than one decimal point"
    if tail[:1] in ("+", "-"):
        return "a sign is only allowed at the start or after e/E"
    if tail[:1] in ("e", "E") and tail[1:2] in ("", "+", "-", *"0123456789"):
        return "the exponent after e/E must be an integer, e.g. 1e3 or 5E-3"
    near = [s for s in _SUFFIXES if s and s.lower() == tail.lower()]
    if near and tail not in _SUFFIXES:
        return f"unknown suffix {preview(tail)} (suffixes are case-sensitive: did you mean {near[0]!r}?)"
    if tail not in _SUFFIXES:
        return f"unknown suffix {preview(tail)}; {_SHAPE}"
    return _SHAPE


def _parse_nano_uncached(text: str) -> int:
    nano = _fast_nano(text) if text else None
    return _slow_nano(text) if nano is None else nano


_parse_nano_cached = functools.lru_cache(maxsize=65536)(_parse_nano_uncached)


def _nano_of(value: object) -> int:
    """The value of a JSON quantity (string or number) in nano units; raises _Invalid."""
    if type(value) is str:
        # Long strings bypass the cache so it cannot pin large inputs in memory.
        return _parse_nano_cached(value) if len(value) <= 64 else _parse_nano_uncached(value)
    if isinstance(value, bool):
        raise _Invalid("must be a string or a number, not a boolean")
    if isinstance(value, int):
        if -(10**_MAX_DIGITS) < value < 10**_MAX_DIGITS:
            return int(value) * _NANO
        raise _Invalid(f"too large: magnitude must be below 10^{_MAX_DIGITS}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid("must be a finite number")
        return _parse_nano_cached(repr(value))
    if isinstance(value, str):  # str subclass
        return _parse_nano_uncached(str(value))
    raise _Invalid(f"must be a string or a number, not {type(value).__name__}")


def _error(value: object, reason: str, obj: str, field: str) -> QuantityError:
    """QuantityError for ``value``; absurdly long inputs are shortened so the message stays printable."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        value = f"<{value.bit_length()}-bit integer>"  # repr() of a huge int can even raise
    elif isinstance(value, str) and len(value) > 200:
        value = f"{value[:100]}...<{len(value)} characters>"
    return QuantityError(value, reason, obj=obj, field=field)


def _round_away(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded away from zero (upstream's "round up")."""
    if numerator >= 0:
        return -(-numerator // denominator)
    return numerator // denominator


def parse_quantity(text: str | int | float, *, obj: str = "", field: str = "") -> Fraction:
    """Parse a quantity to its exact value, as upstream ``ParseQuantity`` holds it.

    Non-zero values are rounded up (away from zero) to a whole nano, binary-SI values are capped at
    2**63-1. Ints are read as their decimal text, finite floats as their ``repr``. Raises
    :class:`QuantityError` naming ``obj``, ``field`` and the value for anything else.
    """
    try:
        nano = _nano_of(text)
    except _Invalid as exc:
        raise _error(text, str(exc), obj, field) from None
    return Fraction(nano, _NANO)


def to_units(q: Fraction) -> int:
    """Upstream ``Value()``: ``q`` rounded up to an integer, away from zero for negatives."""
    q = Fraction(q)
    return _round_away(q.numerator, q.denominator)


def to_milli(q: Fraction) -> int:
    """Upstream ``MilliValue()``: ``q * 1000`` rounded up, away from zero for negatives."""
    q = Fraction(q)
    return _round_away(q.numerator * 1000, q.denominator)


# --- remembered canonical integers -----------------------------------------------------------------
_VALUE_MEMO_SIZE = 4096
_values: dict[tuple[str, str], int] = {}
"""(resource, quantity text) -> canonical value: every pod of a workload and every node of a pool
repeats the same few texts, and the watch decodes each object again on every change."""


def known_value(resource_name: str, text: object) -> int | None:
    """:func:`canonical_value` of a text seen valid before, or None (a number, or a new text)."""
    return _values.get((resource_name, text)) if type(text) is str else None


def keep_value(resource_name: str, text: object, value: int) -> int:
    """Remember ``value`` as the canonical value of ``text`` (text values only); returns it."""
    if type(text) is str:
        if len(_values) >= _VALUE_MEMO_SIZE:
            _values.clear()
        _values[(resource_name, text)] = value
    return value


# --- checked canonical integers ------------------------------------------------------------------


def _checked(text: object, per_unit_nano: int, unit: str, obj: str, field: str) -> int:
    try:
        nano = _nano_of(text)
    except _Invalid as exc:
        raise _error(text, str(exc), obj, field) from None
    if nano < 0:
        raise _error(text, "must not be negative", obj, field)
    value = -(-nano // per_unit_nano)
    if value > INT64_MAX:
        raise _error(text, f"too large: {value} {unit} exceeds the int64 maximum {INT64_MAX}", obj, field)
    return value


def parse_cpu_millis(text: str | int | float, *, obj: str = "", field: str = "") -> int:
    """A non-negative cpu quantity in millicores (``MilliValue()``), e.g. ``"0.1m"`` -> 1."""
    return _checked(text, _MILLI_IN_NANO, "millicores", obj, field)


def parse_bytes(text: str | int | float, *, obj: str = "", field: str = "") -> int:
    """A non-negative memory/storage quantity in bytes (``Value()``), e.g. ``"100m"`` -> 1."""
    return _checked(text, _NANO, "bytes", obj, field)


def parse_count(text: str | int | float, *, obj: str = "", field: str = "") -> int:
    """A non-negative count (pods, extended resources) as an integer (``Value()``)."""
    return _checked(text, _NANO, "units", obj, field)


def canonical_value(resource_name: str, text: str | int | float, *, obj: str = "", field: str = "") -> int:
    """The integer kube-scheduler uses for ``resource_name``: millicores for ``cpu``, else ``Value()``.

    Memory, ephemeral-storage, hugepages-*, pods and extended resources (``nvidia.com/gpu``) are in
    base units. Negative values and values whose integer does not fit an int64 raise QuantityError.
    """
    if resource_name == "cpu":
        return _checked(text, _MILLI_IN_NANO, "millicores", obj, field)
    return _checked(text, _NANO, "units", obj, field)
