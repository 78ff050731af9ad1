"""Property tests for ksched.model.quantity against an independent Decimal/Fraction oracle."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.errors import QuantityError
from ksched.model import quantity as qty
from ksched.model.quantity import INT64_MAX, canonical_value, parse_quantity, to_milli, to_units

DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
NANO = Fraction(1, 10**9)


def oracle(sign: str, number: str, multiplier: Fraction, binary: bool) -> Fraction:
    """Upstream's value: exact, rounded away from zero to a nano, binary SI capped at 2**63-1."""
    exact = Fraction(Decimal(number)) * multiplier
    nanos = math.ceil(exact / NANO)
    value = nanos * NANO
    if binary:
        value = min(value, Fraction(INT64_MAX))
    return -value if sign == "-" else value


signs = st.sampled_from(["", "+", "-"])
int_digits = st.integers(min_value=0, max_value=10**20).map(str) | st.text("0123456789", max_size=25)
frac_digits = st.text("0123456789", max_size=30)


@st.composite
def numbers(draw) -> str:
    whole, frac = draw(int_digits), draw(frac_digits)
    form = draw(st.sampled_from(["int", "dot", "frac", "leading-dot"]))
    whole = whole or "0"
    if form == "int":
        return whole
    if form == "dot":
        return whole + "."
    if form == "leading-dot":
        return "." + (frac or "5")
    return f"{whole}.{frac}"


@given(signs, numbers(), st.sampled_from(sorted(DECIMAL)))
def test_decimal_si_matches_oracle(sign, number, suffix):
    expected = oracle(sign, number, Fraction(10) ** DECIMAL[suffix], binary=False)
    text = sign + number + suffix
    if abs(expected) >= 10**40:
        return  # beyond the documented parse limit
    assert parse_quantity(text) == expected


@given(signs, numbers(), st.sampled_from(sorted(BINARY)))
def test_binary_si_matches_oracle(sign, number, suffix):
    expected = oracle(sign, number, Fraction(2) ** BINARY[suffix], binary=True)
    assert parse_quantity(sign + number + suffix) == expected


@given(
    signs,
    numbers(),
    st.sampled_from(["e", "E"]),
    st.sampled_from(["", "+", "-"]),
    st.integers(min_value=0, max_value=60),
)
def test_exponent_matches_oracle(sign, number, e, exp_sign, exponent):
    power = -exponent if exp_sign == "-" else exponent
    expected = oracle(sign, number, Fraction(10) ** power, binary=False)
    text = f"{sign}{number}{e}{exp_sign}{exponent}"
    if abs(expected) >= 10**40:
        return
    assert parse_quantity(text) == expected


@given(
    signs, st.integers(min_value=0, max_value=10**18 - 1), st.sampled_from(sorted(DECIMAL) + sorted(BINARY))
)
def test_fast_path_equals_slow_path(sign, n, suffix):
    text = f"{sign}{n}{suffix}"
    fast = qty._fast_nano(text)
    assert fast is not None
    assert fast == qty._slow_nano(text)


@given(st.fractions(min_value=-(10**12), max_value=10**12, max_denominator=10**12))
def test_rounding_is_away_from_zero(q):
    units, millis = to_units(q), to_milli(q)
    if q >= 0:
        assert units == math.ceil(q)
        assert millis == math.ceil(q * 1000)
    else:
        assert units == math.floor(q)
        assert millis == math.floor(q * 1000)


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from(["", "m", "k", "Mi", "Gi"]))
def test_canonical_value_is_rounded_up(n, suffix):
    text = f"{n}{suffix}"
    q = parse_quantity(text)
    for resource, expected in (("cpu", math.ceil(q * 1000)), ("memory", math.ceil(q))):
        if expected <= INT64_MAX:
            assert canonical_value(resource, text) == expected
        else:
            with pytest.raises(QuantityError, match="too large"):
                canonical_value(resource, text)


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_json_int_equals_its_text(n):
    assert parse_quantity(n) == parse_quantity(str(n)) == n


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30))
def test_json_float_is_its_repr(x):
    assert parse_quantity(x) == parse_quantity(repr(x))
