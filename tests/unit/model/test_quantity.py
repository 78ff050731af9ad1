"""Tests for ksched.model.quantity.

Table cases ported from upstream ``staging/src/k8s.io/apimachinery/pkg/api/resource/quantity_test.go``
(``TestQuantityParse``: good table, its negative/``+`` variants and the invalid list;
``TestQuantityRoundUp``) plus the scheduler-facing conversions.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

from ksched.errors import ObjectError, QuantityError
from ksched.model import quantity as qty
from ksched.model.quantity import (
    INT64_MAX,
    canonical_value,
    parse_bytes,
    parse_count,
    parse_cpu_millis,
    parse_quantity,
    to_milli,
    to_units,
)

MAX = INT64_MAX
KI, MI, GI, TI, PI, EI = (2**e for e in (10, 20, 30, 40, 50, 60))

# input, exact value after upstream's parse-time rounding (up to a whole nano; binary SI capped).
UPSTREAM_GOOD = [
    ("0", 0), ("0n", 0), ("0u", 0), ("0m", 0), ("0Ki", 0), ("0k", 0), ("0Mi", 0), ("0M", 0),
    ("0Gi", 0), ("0G", 0), ("0Ti", 0), ("0T", 0),
    ("1", 1),
    ("1Ki", KI), ("8Ki", 8 * KI), ("7Mi", 7 * MI), ("6Gi", 6 * GI), ("5Ti", 5 * TI), ("4Pi", 4 * PI),
    ("3Ei", 3 * EI), ("10Ti", 10 * TI), ("100Ti", 100 * TI),
    ("5n", F(5, 10**9)), ("4u", F(4, 10**6)), ("3m", F(3, 1000)), ("9", 9), ("8k", 8000),
    ("50k", 50000), ("7M", 7 * 10**6), ("6G", 6 * 10**9), ("5T", 5 * 10**12), ("40T", 4 * 10**13),
    ("300T", 3 * 10**14), ("2P", 2 * 10**15), ("1E", 10**18),
    ("1E-3", F(1, 1000)), ("1e3", 1000), ("1E6", 10**6), ("1e9", 10**9), ("1E12", 10**12),
    ("1e15", 10**15), ("1E18", 10**18), ("1e14", 10**14), ("1e13", 10**13), ("100.035k", 100035),
    ("0.001", F(1, 1000)), ("0.0005k", F(1, 2)), ("0.005", F(5, 1000)), ("0.05", F(5, 100)),
    ("0.5", F(1, 2)), ("0.00050k", F(1, 2)), ("0.00500", F(5, 1000)), ("0.05000", F(5, 100)),
    ("0.50000", F(1, 2)), ("0.5e0", F(1, 2)), ("0.5e-1", F(5, 100)), ("0.5e-2", F(5, 1000)),
    ("10.035M", 10035000),
    ("1.2e3", 1200), ("1.3E+6", 1300000), ("1.40e9", 14 * 10**8), ("1.53E12", 153 * 10**10),
    ("1.6e15", 16 * 10**14), ("1.7E18", 17 * 10**17),
    ("9.01", F(901, 100)), ("8.1k", 8100), ("7.123456M", 7123456), ("6.987654321G", 6987654321),
    ("5.444T", 5444 * 10**9), ("40.1T", 401 * 10**11), ("300.2T", 3002 * 10**11), ("2.5P", 25 * 10**14),
    ("1.01E", 101 * 10**16),
    # things that saturate/round
    ("3.001n", F(4, 10**9)), ("1.1E-9", F(2, 10**9)), ("0.0000000001", F(1, 10**9)),
    ("0.0000000005", F(1, 10**9)), ("0.00000000050", F(1, 10**9)), ("0.5e-9", F(1, 10**9)),
    ("0.9n", F(1, 10**9)), ("0.00000012345", F(124, 10**9)), ("0.00000012354", F(124, 10**9)),
    ("9Ei", MAX), ("9223372036854775807Ki", MAX), ("12E", 12 * 10**18),
    # fractional binary
    ("100.035Ki", F(10243584, 100)), ("0.5Mi", MI // 2), ("0.05Gi", F(536870912, 10)),
    ("0.025Ti", F(274877906944, 10)),
    # things written by trolls
    ("0.000000000001Ki", F(2, 10**9)), (".001", F(1, 1000)), (".0001k", F(1, 10)), ("1.", 1),
    ("1.G", 10**9),
]

# The brief's own cases (some overlap with upstream's).
EXTRA_GOOD = [
    ("0.1m", F(1, 10**4)), ("1.5Ki", 1536), ("100m", F(1, 10)), ("12e6", 12 * 10**6),
    ("12e+6", 12 * 10**6), ("1Ei", EI), (".5", F(1, 2)), ("5.", 5), ("-1", -1), ("+1", 1),
    ("1Gi", GI), ("2Gi", 2 * GI), ("500Mi", 500 * MI), ("-1.5", F(-3, 2)), ("007", 7),
    ("1e0003", 1000), ("1e-0", 1), ("8Ei", MAX), ("-9Ei", -MAX), ("-0", 0), ("+0.0m", 0),
    ("1e-2147483647", F(1, 10**9)), ("-1e-2147483647", F(-1, 10**9)),
    ("0." + "0" * 5000 + "1", F(1, 10**9)), ("0." + "0" * 5000 + "1Ki", F(1, 10**9)),
    ("1." + "0" * 5000 + "Ki", KI), ("1." + "0" * 5000 + "1Mi", MI + F(1, 10**9)),
    ("1" + "0" * 39, 10**39),
]


def _p(cases):
    return [pytest.param(t, F(v), id=t if len(t) < 40 else t[:20] + "...") for t, v in cases]


@pytest.mark.parametrize(("text", "expected"), _p(UPSTREAM_GOOD + EXTRA_GOOD))
def test_parse_good(text, expected):
    assert parse_quantity(text) == expected
    assert type(parse_quantity(text)) is F


@pytest.mark.parametrize(("text", "expected"), _p(UPSTREAM_GOOD))
def test_parse_sign_variants(text, expected):
    # upstream's table is re-run with a leading "-" (negated value) and a leading "+".
    assert parse_quantity("-" + text) == -expected
    assert parse_quantity("+" + text) == expected


UPSTREAM_BAD = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e4294967297",
                " 1", "1 "]
EXTRA_BAD = [
    "", " ", "1.2.3", "1Q", "1 Gi", "1e", "e3", "Ki", "1ki", "1KI", "1.0.0", "--1", "+-1", "-+1", ".", "+",
    "-", "m", "E", "Mi", "1K", "1Ee3", "1e3.5", "1e+", "1e3e3", "1Kib", "1\n", "\t1", "1_000",
    "\uff11", "1\u00b2", "0x10",
    "1e9223372036854775808", "1e2147483648", "1e1000000000", "1e99999999999999999999999999", "1" + "0" * 40,
    "1e40", "0.1e41", "NaN", "Infinity", "-inf",
]


@pytest.mark.parametrize("text", [pytest.param(t, id=repr(t)) for t in UPSTREAM_BAD + EXTRA_BAD])
def test_parse_bad(text):
    with pytest.raises(QuantityError) as info:
        parse_quantity(text, obj="Pod default/web-1", field="spec.containers[0].resources.requests.cpu")
    msg = str(info.value)
    assert msg.startswith("Pod default/web-1: spec.containers[0].resources.requests.cpu: invalid quantity ")
    assert repr(text) in msg
    assert info.value.value == text
    assert isinstance(info.value, ObjectError)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("", "empty string", id="empty"),
        pytest.param("1 Gi", "whitespace", id="space"),
        pytest.param("1.2.3", "decimal point", id="dots"),
        pytest.param("1ki", "did you mean 'Ki'", id="case"),
        pytest.param("1e", "exponent", id="bare-e"),
        pytest.param("Ki", "no digits", id="suffix-only"),
        pytest.param("1Q", "unknown suffix 'Q'", id="unknown"),
        pytest.param("1e1000000000", "too large", id="huge-exp"),
        pytest.param("1e4294967297", "exponent out of range", id="exp-int32"),
    ],
)
def test_bad_reasons(text, reason):
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert reason in str(info.value)


def test_absurd_exponent_is_cheap():
    import time

    start = time.perf_counter()
    for text in ("1e1000000000", "1e2147483647", "9" * 100 + "e2147483647"):
        with pytest.raises(QuantityError):
            parse_quantity(text)
    for text in ("1e-2147483647", "0." + "0" * 100_000 + "1"):
        assert parse_quantity(text) == F(1, 10**9)
    assert time.perf_counter() - start < 1.0


# --- JSON numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(0, 0, id="int0"),
        pytest.param(5, 5, id="int5"),
        pytest.param(-3, -3, id="int-neg"),
        pytest.param(2**62, 2**62, id="int-big"),
        pytest.param(0.5, F(1, 2), id="float-half"),
        pytest.param(0.1, F(1, 10), id="float-tenth-as-repr"),
        pytest.param(1e16, 10**16, id="float-exp"),
        pytest.param(1e-12, F(1, 10**9), id="float-tiny"),
        pytest.param(-0.0, 0, id="float-negzero"),
        pytest.param(2.0, 2, id="float-two"),
    ],
)
def test_json_numbers(value, expected):
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(math.nan, id="nan"),
        pytest.param(math.inf, id="inf"),
        pytest.param(-math.inf, id="-inf"),
        pytest.param(True, id="bool"),
        pytest.param(None, id="none"),
        pytest.param([1], id="list"),
        pytest.param(b"1", id="bytes"),
        pytest.param(10**40, id="int-too-large"),
        pytest.param(10**5000, id="int-huge"),
    ],
)
def test_json_bad(value):
    with pytest.raises(QuantityError) as info:
        parse_quantity(value, obj="Node n1", field="status.allocatable.cpu")
    assert "Node n1: status.allocatable.cpu: invalid quantity" in str(info.value)


# --- rounding (Value / MilliValue) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "units", "millis"),
    [
        pytest.param("0.1m", 1, 1, id="0.1m"),
        pytest.param("100m", 1, 100, id="100m"),
        pytest.param("1m", 1, 1, id="1m"),
        pytest.param("1000m", 1, 1000, id="1000m"),
        pytest.param("1001m", 2, 1001, id="1001m"),
        pytest.param("1.5Ki", 1536, 1536000, id="1.5Ki"),
        pytest.param("0.5", 1, 500, id="0.5"),
        pytest.param("1n", 1, 1, id="1n"),
        pytest.param("1e-12", 1, 1, id="1e-12"),
        pytest.param("0", 0, 0, id="0"),
        pytest.param("9.01", 10, 9010, id="9.01"),
        # upstream TestQuantityRoundUp / negativeScaleInt64: negatives round away from zero
        pytest.param("-9.01", -10, -9010, id="-9.01"),
        pytest.param("-1.5", -2, -1500, id="-1.5"),
        pytest.param("-0.1m", -1, -1, id="-0.1m"),
        pytest.param("-1", -1, -1000, id="-1"),
    ],
)
def test_to_units_and_milli(text, units, millis):
    q = parse_quantity(text)
    assert to_units(q) == units
    assert to_milli(q) == millis


def test_to_units_accepts_any_fraction():
    assert to_units(F(1, 3)) == 1
    assert to_units(F(-1, 3)) == -1
    assert to_milli(F(1, 3)) == 334
    assert to_milli(F(-1, 3000)) == -1
    assert to_units(F(7)) == 7


# --- checked canonical integers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        pytest.param("cpu", "100m", 100, id="cpu-100m"),
        pytest.param("cpu", "0.1m", 1, id="cpu-0.1m"),
        pytest.param("cpu", "2", 2000, id="cpu-2"),
        pytest.param("cpu", 2, 2000, id="cpu-int"),
        pytest.param("cpu", 0.25, 250, id="cpu-float"),
        pytest.param("cpu", "1.5", 1500, id="cpu-1.5"),
        pytest.param("memory", "100m", 1, id="memory-100m"),
        pytest.param("memory", "1Gi", GI, id="memory-1Gi"),
        pytest.param("memory", "1.5Ki", 1536, id="memory-1.5Ki"),
        pytest.param("memory", "1e3", 1000, id="memory-1e3"),
        pytest.param("memory", "9Ei", MAX, id="memory-capped"),
        pytest.param("ephemeral-storage", "10G", 10**10, id="storage"),
        pytest.param("pods", "110", 110, id="pods"),
        pytest.param("hugepages-2Mi", "4Mi", 4 * MI, id="hugepages"),
        pytest.param("nvidia.com/gpu", "1", 1, id="extended"),
        pytest.param("nvidia.com/gpu", "0.5", 1, id="extended-rounds-up"),
        pytest.param("cpu", "9223372036854775807m", MAX, id="cpu-int64-max"),
        pytest.param("memory", "9223372036854775807", MAX, id="memory-int64-max"),
    ],
)
def test_canonical_value(resource, text, expected):
    assert canonical_value(resource, text) == expected


def test_wrappers():
    assert parse_cpu_millis("250m") == 250
    assert parse_bytes("500Mi") == 500 * MI
    assert parse_count("3") == 3
    assert parse_bytes("100m") == 1


@pytest.mark.parametrize(
    ("resource", "text", "reason"),
    [
        pytest.param("cpu", "-1", "must not be negative", id="cpu-negative"),
        pytest.param("memory", "-1Gi", "must not be negative", id="memory-negative"),
        pytest.param("pods", -1, "must not be negative", id="pods-negative-int"),
        pytest.param("cpu", "-0.1m", "must not be negative", id="cpu-tiny-negative"),
        pytest.param("memory", "12E", "too large", id="memory-12E"),
        pytest.param("memory", "9223372036854775808", "too large", id="memory-int64+1"),
        pytest.param("cpu", "9223372036854775808m", "too large", id="cpu-int64+1"),
        pytest.param("cpu", "9223372036854776", "too large", id="cpu-milli-overflow"),
        pytest.param("cpu", "9Ei", "too large", id="cpu-capped-binary-overflows-milli"),
        pytest.param("memory", "1e40", "too large", id="parse-limit"),
        pytest.param("memory", "1Q", "unknown suffix", id="invalid"),
    ],
)
def test_canonical_value_rejects(resource, text, reason):
    with pytest.raises(QuantityError) as info:
        field = f"spec.containers[0].resources.requests.{resource}"
        canonical_value(resource, text, obj="Pod ns/p", field=field)
    msg = str(info.value)
    assert reason in msg
    assert msg.startswith(f"Pod ns/p: spec.containers[0].resources.requests.{resource}: invalid quantity ")
    assert repr(text) in msg


@pytest.mark.parametrize("func", [parse_cpu_millis, parse_bytes, parse_count])
def test_wrappers_reject_negative(func):
    with pytest.raises(QuantityError, match="must not be negative"):
        func("-5", obj="o", field="f")


def test_cpu_limit_is_in_millicores():
    # 9223372036854775 cores is the most whose millicores still fit an int64.
    assert parse_cpu_millis("9223372036854775") == 9223372036854775000
    with pytest.raises(QuantityError, match="too large"):
        parse_cpu_millis("9223372036854775.808")


# --- fast path / cache ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["0", "1", "100m", "2Gi", "500Mi", "-3k", "+7Ei", "8Ei", "999999999999999999Ei", "5n", "12E", "0003u"],
)
def test_fast_path_agrees_with_slow_path(text):
    fast = qty._fast_nano(text)
    assert fast is not None
    assert fast == qty._slow_nano(text)


@pytest.mark.parametrize("text", ["1.5", "1e3", "Ki", "-", "1ki", "1 ", "\u0661", "1" * 19, "+-1"])
def test_fast_path_declines(text):
    assert qty._fast_nano(text) is None


def test_cache_does_not_swallow_context():
    for obj in ("Pod a/one", "Pod a/two"):
        with pytest.raises(QuantityError, match=obj):
            canonical_value("cpu", "7Q", obj=obj, field="x")
    assert canonical_value("cpu", "7") == 7000
    assert canonical_value("memory", "7") == 7
