"""Tests for ksched.model.labels.

The good/bad tables are upstream's, from kubernetes/kubernetes
``staging/src/k8s.io/apimachinery/pkg/util/validation/validation_test.go`` (``TestIsQualifiedName``
``successCases``/``errorCases``, ``TestIsValidLabelValue`` ``successCases``/``errorCases`` and
``TestIsDNS1123Subdomain`` ``goodValues``/``badValues``). The exact messages follow ``validation.go``
(``IsQualifiedName``, ``IsValidLabelValue``, ``IsDNS1123Subdomain``, ``RegexError``, ``MaxLenError``).
"""

from __future__ import annotations

import pytest

from ksched.config._names_validation import label_value_problems, qualified_name_problems
from ksched.errors import ObjectError
from ksched.model import selectors
from ksched.model.labels import (
    dns1123_subdomain_errors,
    is_dns1123_subdomain,
    label_value_errors,
    parse_go_int64,
    qualified_name_errors,
    regex_error,
)

# TestIsQualifiedName
QUALIFIED_NAME_GOOD = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "1234",
    "simple/simple",
    "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes",
    "now.with.dots/simple",
    "now-with.dashes-and.dots/simple",
    "1-num.2-num/3-num",
    "1234/5678",
    "1.2.3.4/5678",
    "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123",
    "requests.storage-foo",
    "a" * 63,
    "a" * 253 + "/" + "b" * 63,
]
QUALIFIED_NAME_BAD = [
    "nospecialchars%^=@",
    "cantendwithadash-",
    "-cantstartwithadash-",
    "only/one/slash",
    "Example.com/abc",
    "example_com/abc",
    "example.com/",
    "/simple",
    "a" * 64,
    "a" * 254 + "/abc",
]

# TestIsValidLabelValue
LABEL_VALUE_GOOD = [
    "simple",
    "now-with-dashes",
    "1-starts-with-num",
    "end-with-num-1",
    "1234",  # only num
    "a" * 63,  # to the limit
    "",  # empty value
]
LABEL_VALUE_BAD = [
    "nospecialchars%^=@",
    "Tama-nui-te-rā.is.Māori.sun",
    "\\backslashes\\are\\bad",
    "-starts-with-dash",
    "ends-with-dash-",
    ".starts.with.dot",
    "ends.with.dot.",
    "a" * 64,  # over the limit
]

# TestIsDNS1123Subdomain
DNS1123_SUBDOMAIN_GOOD = [
    *("a", "ab", "abc", "a1", "a-1", "a--1--2--b"),
    *("0", "01", "012", "1a", "1-a", "1--a--b--2"),
    *("a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a"),
    *("a.1", "ab.1", "abc.1", "a1.1", "a-1.1", "a--1--2--b.1"),
    *("0.a", "01.a", "012.a", "1a.a", "1-a.a", "1--a--b--2"),
    *("0.1", "01.1", "012.1", "1a.1", "1-a.1", "1--a--b--2.1"),
    *("a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55"),
    "a" * 253,
]
DNS1123_SUBDOMAIN_BAD = [
    *("", "A", "ABC", "aBc", "A1", "A-1", "1-A"),
    *("-", "a-", "-a", "1-", "-1"),
    *("_", "a_", "_a", "a_b", "1_", "_1", "1_2"),
    *(".", "a.", ".a", "a..b", "1.", ".1", "1..2"),
    *(" ", "a ", " a", "a b", "1 ", " 1", "1 2"),
    *("A.a", "aB.a", "ab.A", "A1.a", "a1.A"),
    *("A.1", "aB.1", "A1.1", "1A.1"),
    *("0.A", "01.A", "012.A", "1A.a", "1a.A"),
    *("A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e", "aa.bB.cc.dd.ee"),
    *("a@b", "a,b", "a_b", "a;b"),
    *("a:b", "a%b", "a?b", "a$b"),
    "a" * 254,
]

NAME_REGEX = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
PREFIX_REGEX = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
VALUE_REGEX = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


# Each kind: upstream's check, config's wording of it, parse_label_selector's check (raises).
CHECKS = {
    "key": (qualified_name_errors, qualified_name_problems, selectors._check_label_key),
    "value": (label_value_errors, label_value_problems, selectors._check_label_value),
}
TABLE = [
    *(("key", v, True) for v in QUALIFIED_NAME_GOOD),
    *(("key", v, False) for v in QUALIFIED_NAME_BAD),
    *(("value", v, True) for v in LABEL_VALUE_GOOD),
    *(("value", v, False) for v in LABEL_VALUE_BAD),
]


@pytest.mark.parametrize(("kind", "value", "valid"), TABLE)
def test_upstream_tables(kind: str, value: str, valid: bool) -> None:
    errors, problems, check = CHECKS[kind]
    assert (errors(value) == []) is valid
    assert (problems(value) == []) is valid
    try:
        check(value, "obj", "field")
    except ObjectError as e:
        assert not valid, str(e)
        assert f"invalid label {kind}" in str(e)
    else:
        assert valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [*((v, True) for v in DNS1123_SUBDOMAIN_GOOD), *((v, False) for v in DNS1123_SUBDOMAIN_BAD)],
)
def test_dns1123_subdomain_table(value: str, valid: bool) -> None:
    assert is_dns1123_subdomain(value) is valid
    assert (dns1123_subdomain_errors(value) == []) is valid


def test_regex_error_formatting() -> None:
    """``RegexError`` ends each example with ``', '`` and joins them with ``' or '``."""
    assert regex_error("m", "f") == "m (regex used for validation is 'f')"
    assert regex_error("m", "f", "x") == "m (e.g. 'x', regex used for validation is 'f')"
    assert regex_error("m", "f", "x", "y") == "m (e.g. 'x',  or 'y', regex used for validation is 'f')"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("invalid key", ["name part " + NAME_REGEX]),
        ("", ["name part must be non-empty", "name part " + NAME_REGEX]),
        ("a" * 64, ["name part must be no more than 63 characters"]),
        ("-" * 64, ["name part must be no more than 63 characters", "name part " + NAME_REGEX]),
        ("example.com/", ["name part must be non-empty", "name part " + NAME_REGEX]),
        ("/simple", ["prefix part must be non-empty"]),
        ("Example.com/-x", ["prefix part " + PREFIX_REGEX, "name part " + NAME_REGEX]),
        ("a" * 254 + "/abc", ["prefix part must be no more than 253 characters"]),
        (
            "A" * 254 + "/abc",
            ["prefix part must be no more than 253 characters", "prefix part " + PREFIX_REGEX],
        ),
        (
            "only/one/slash",
            [
                "a qualified name "
                + NAME_REGEX
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
        ),
    ],
)
def test_qualified_name_messages(value: str, want: list[str]) -> None:
    assert qualified_name_errors(value) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("-x", [VALUE_REGEX]),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("-" * 64, ["must be no more than 63 characters", VALUE_REGEX]),
    ],
)
def test_label_value_messages(value: str, want: list[str]) -> None:
    assert label_value_errors(value) == want


def test_go_semantics_whole_string_and_bytes() -> None:
    """Go's ``^...$`` does not match before a trailing newline, and its ``len`` counts bytes."""
    assert qualified_name_errors("abc\n") == ["name part " + NAME_REGEX]
    assert label_value_errors("abc\n") == [VALUE_REGEX]
    assert not is_dns1123_subdomain("abc\n")
    assert label_value_errors("é" * 40) == ["must be no more than 63 characters", VALUE_REGEX]


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("Example.com/abc", "prefix part " + PREFIX_REGEX.split(" (e.g.")[0]),
        ("-x", "a qualified name " + NAME_REGEX.split(" (e.g.")[0]),
        ("a" * 64, "name part must be no more than 63 characters"),
        ("/simple", "prefix part must be non-empty"),
        (
            "only/one/slash",
            "a qualified name "
            + NAME_REGEX.split(" (e.g.")[0]
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
    ],
)
def test_config_wording(value: str, want: str) -> None:
    """Config validation reports only the first problem, without ``RegexError``'s tail."""
    assert qualified_name_problems(value) == [want]


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("a/b/c!", "name part"),
        ("a/b/c", "prefix part"),
        ("Bad/x", "prefix part"),
        ("Bad/-x", "name part"),
        ("x/", "name part"),
        ("/x", "prefix part"),
    ],
)
def test_selector_key_wording(key: str, problem: str) -> None:
    """``parse_label_selector`` blames the name part (text after the last ``/``) first."""
    with pytest.raises(ObjectError, match=f"invalid label key .*: {problem} must"):
        selectors._check_label_key(key, "obj", "field")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0", 0),
        ("+12", 12),
        ("-12", -12),
        ("007", 7),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),
        ("-9223372036854775809", None),
        ("", None),
        ("+", None),
        ("1_0", None),
        (" 1", None),
        ("1 ", None),
        ("1\n", None),
        ("0x10", None),
        ("1.0", None),
        ("٣", None),  # non-ASCII digits: Python's int() takes them, Go does not
        ("３", None),
    ],
)
def test_parse_go_int64(text: str, want: int | None) -> None:
    assert parse_go_int64(text) == want
    assert selectors.parse_go_int64 is parse_go_int64
