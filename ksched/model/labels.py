"""Kubernetes label key / value syntax and Go integer parsing, reproduced exactly.

The one implementation of apimachinery's ``util/validation`` checks that the scheduler repeats:
``IsQualifiedName`` (label keys, resource names, topology keys), ``IsValidLabelValue`` and
``IsDNS1123Subdomain``, with upstream's messages word for word (``RegexError`` included, whose
examples are joined with ``",  or "`` — two spaces). The wording is that of ``validation.go``
(``"a qualified name ..."``, ``"must be no more than N characters"``); newer apimachinery moves these
checks to ``api/validate/content`` (``IsLabelKey``: ``"a valid label key ..."``, ``"... N bytes"``),
which this module does not follow. Lengths are counted in UTF-8
bytes and patterns must match the whole string, as Go's ``len`` and ``regexp`` ``^...$`` do.

``parse_go_int64`` is Go's ``strconv.ParseInt(s, 10, 64)``, used for ``Gt``/``Lt`` node selector
values and integer label values.

Callers that word their errors differently (config validation, ``parse_label_selector``) adapt
these messages at their call site.
"""

from __future__ import annotations

import re

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_ERR_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
LABEL_VALUE_ERR_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = f"{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"
DNS1123_SUBDOMAIN_ERR_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)
_GO_INT_RE = re.compile(r"[+-]?[0-9]+")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery ``RegexError``: ``msg``, the examples (``'x', `` each, joined by `` or ``), the regex."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """apimachinery ``MaxLenError``."""
    return f"must be no more than {length} characters"


EMPTY_ERROR = "must be non-empty"
"""apimachinery ``EmptyError()``."""

QUALIFIED_NAME_REGEX_ERROR = regex_error(
    QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"
)
"""``RegexError`` for a bad name part (``IsQualifiedName`` prefixes it with ``"name part "``)."""

QUALIFIED_NAME_PARTS_ERROR = (
    f"a qualified name {QUALIFIED_NAME_REGEX_ERROR}"
    " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
"""``IsQualifiedName``'s only error for a value with more than one ``/``."""

DNS1123_SUBDOMAIN_REGEX_ERROR = regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, "example.com")
LABEL_VALUE_REGEX_ERROR = regex_error(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345")


def _go_len(value: str) -> int:
    """Go's ``len`` of a string: its UTF-8 byte count."""
    return len(value.encode("utf-8", "surrogatepass"))


def _length_and_pattern_errors(
    value: str, max_length: int, pattern: re.Pattern[str], regex_err: str
) -> list[str]:
    """Upstream's common shape: ``MaxLenError`` when too long, then the ``RegexError`` when unmatched."""
    errs: list[str] = []
    if _go_len(value) > max_length:
        errs.append(max_len_error(max_length))
    if not pattern.fullmatch(value):
        errs.append(regex_err)
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Subdomain``: the problems found, empty when valid."""
    return _length_and_pattern_errors(
        value, DNS1123_SUBDOMAIN_MAX_LENGTH, _DNS1123_SUBDOMAIN_RE, DNS1123_SUBDOMAIN_REGEX_ERROR
    )


def is_dns1123_subdomain(value: str) -> bool:
    """Whether ``value`` passes apimachinery ``IsDNS1123Subdomain`` (lowercase, at most 253 bytes)."""
    return not dns1123_subdomain_errors(value)


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery ``IsQualifiedName``: ``[prefix/]name``, a DNS-1123 subdomain prefix and a 63-byte name.

    Returns every problem upstream reports, in its order (empty when valid).
    """
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + EMPTY_ERROR)
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return [QUALIFIED_NAME_PARTS_ERROR]
    if not name:
        errs.append("name part " + EMPTY_ERROR)
    elif _go_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + QUALIFIED_NAME_REGEX_ERROR)
    return errs


def label_value_errors(value: str) -> list[str]:
    """apimachinery ``IsValidLabelValue``: empty, or at most 63 bytes shaped like a name part."""
    return _length_and_pattern_errors(value, LABEL_VALUE_MAX_LENGTH, _LABEL_VALUE_RE, LABEL_VALUE_REGEX_ERROR)


def parse_go_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: ASCII digits with an optional sign, within int64.

    ``None`` where Go returns an error. Stricter than Python's ``int()``, which also takes spaces,
    ``_`` separators, a trailing newline and non-ASCII digits.
    """
    if not _GO_INT_RE.fullmatch(text):
        return None
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else None


DNS1123_LABEL_ERR_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
DNS1123_LABEL_MAX_LENGTH = 63
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_ERR_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
DNS1123_LABEL_REGEX_ERROR = regex_error(DNS1123_LABEL_ERR_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc")
DNS1035_LABEL_REGEX_ERROR = regex_error(DNS1035_LABEL_ERR_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123")
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1035_LABEL_RE = re.compile(DNS1035_LABEL_FMT)
RELAXED_ENV_VAR_NAME_ERR_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters other than '='"
)
PORT_RANGE_ERROR = "must be between 1 and 65535, inclusive"
_PORT_NAME_CHARSET_RE = re.compile("[-a-z0-9]+")
_LETTER_RE = re.compile("[a-z]")


def dns1123_label_errors(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Label``: at most 63 bytes of lower-case alphanumerics and ``-``."""
    return _length_and_pattern_errors(
        value, DNS1123_LABEL_MAX_LENGTH, _DNS1123_LABEL_RE, DNS1123_LABEL_REGEX_ERROR
    )


def dns1035_label_errors(value: str) -> list[str]:
    """apimachinery ``IsDNS1035Label``: a DNS-1123 label that starts with a letter (service names)."""
    return _length_and_pattern_errors(
        value, DNS1123_LABEL_MAX_LENGTH, _DNS1035_LABEL_RE, DNS1035_LABEL_REGEX_ERROR
    )


def relaxed_env_var_name_errors(value: str) -> list[str]:
    """apimachinery ``IsRelaxedEnvVarName`` (the rule of v1.34+): printable ASCII except ``=``."""
    if not value:
        return ["environment variable name " + EMPTY_ERROR]
    if any(not (" " <= ch <= "~") or ch == "=" for ch in value):
        return [RELAXED_ENV_VAR_NAME_ERR_MSG]
    return []


def port_num_errors(value: object) -> list[str]:
    """apimachinery ``IsValidPortNum``: 1..65535."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return []
    return [PORT_RANGE_ERROR]


def port_name_errors(value: str) -> list[str]:
    """apimachinery ``IsValidPortName``: an IANA service name (15 bytes, a letter, single hyphens)."""
    errs: list[str] = []
    if _go_len(value) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _LETTER_RE.search(value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs
