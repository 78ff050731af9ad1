"""Checks shared by the other kinds' validation: labels, label selectors, int-or-percent, Go values.

Upstream's field errors print a bad value by its Go type: strings quoted, numbers plain, and any
other type in ``%#v`` (``map[string]string{"app":"a"}``, ``intstr.IntOrString{Type:1, IntVal:0,
StrVal:"5x"}``); :func:`go_map`, :func:`go_selector` and :func:`go_int_or_string` spell the
ones these kinds report. The decoder has already checked every type (:mod:`ksched.sim._decode_types`),
so a value here is of its field's JSON type or ``None``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ksched.model.labels import (
    DNS1123_LABEL_FMT,
    label_value_errors,
    max_len_error,
    qualified_name_errors,
    regex_error,
)
from ksched.sim._storage_validation import Errors, check_label_selector

Obj = dict[str, Any]

NEGATIVE = "must be greater than or equal to 0"
"""apimachinery ``IsNegativeErrorMsg``."""
PERCENT_ERROR = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%"
)
_PERCENT_RE = re.compile(r"[0-9]+%")
_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def raw_invalid(errs: Errors, field: str, shown: str, detail: str) -> None:
    """An Invalid error whose value is already printed the Go way."""
    errs.causes.append(("FieldValueInvalid", field, f"Invalid value: {shown}: {detail}"))


def go_quote(value: str) -> str:
    """Go's ``%q`` of a string (close enough: JSON's escapes)."""
    return json.dumps(value, ensure_ascii=False)


_q = go_quote


def go_map(value: Obj | None) -> str:
    """``%#v`` of a ``map[string]string`` (Go prints maps with sorted keys)."""
    if value is None:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{_q(k)}:{_q(value[k])}" for k in sorted(value)) + "}"


def go_strings(values: list[Any] | None) -> str:
    """``%#v`` of a ``[]string``."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_q(str(v)) for v in values) + "}"


def go_selector(sel: Obj | None) -> str:
    """``%#v`` of a ``*metav1.LabelSelector`` (dereferenced, as field errors print pointers)."""
    if sel is None:
        return "null"
    exprs = sel.get("matchExpressions")
    if exprs is None:
        shown = "[]v1.LabelSelectorRequirement(nil)"
    else:
        items = (
            f"v1.LabelSelectorRequirement{{Key:{_q(e.get('key') or '')}, "
            f"Operator:{_q(e.get('operator') or '')}, Values:{go_strings(e.get('values'))}}}"
            for e in exprs
        )
        shown = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    return f"v1.LabelSelector{{MatchLabels:{go_map(sel.get('matchLabels'))}, MatchExpressions:{shown}}}"


def go_int_or_string(value: int | str) -> str:
    """``%#v`` of an ``intstr.IntOrString``."""
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{_q(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


def nonnegative(errs: Errors, field: str, value: Any) -> None:
    """``ValidateNonnegativeField`` (``None``, an unset field, is 0)."""
    if isinstance(value, int) and value < 0:
        errs.invalid(field, value, NEGATIVE)


def check_labels(errs: Errors, field: str, labels: Obj | None) -> None:
    """``ValidateLabels``: qualified-name keys and label values, each error on the map's path."""
    for key, value in (labels or {}).items():
        for msg in qualified_name_errors(key):
            errs.invalid(field, key, msg)
        for msg in label_value_errors(value or ""):
            errs.invalid(field, value or "", msg)


def check_selector(errs: Errors, field: str, sel: Obj | None) -> None:
    """``ValidateLabelSelector`` of an optional selector."""
    if sel is not None:
        check_label_selector(errs, field, sel)


def selector_matches(sel: Obj, labels: Obj) -> bool:
    """Whether a (valid) label selector selects ``labels``."""
    for key, value in (sel.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in sel.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def selector_parses(sel: Obj) -> bool:
    """Whether ``LabelSelectorAsSelector`` accepts the selector (operators and values it can build)."""
    for expr in sel.get("matchExpressions") or []:
        op, values = expr.get("operator"), expr.get("values") or []
        if op not in _SELECTOR_OPS or (op in ("In", "NotIn") and not values):
            return False
        if op in ("Exists", "DoesNotExist") and values:
            return False
        if qualified_name_errors(expr.get("key") or ""):
            return False
    for key, value in (sel.get("matchLabels") or {}).items():
        if qualified_name_errors(key) or label_value_errors(value or ""):
            return False
    return True


def percent_value(value: int | str) -> int | None:
    """The percentage of a ``"N%"`` value; ``None`` for an int or a malformed string."""
    if isinstance(value, str) and _PERCENT_RE.fullmatch(value):
        return int(value[:-1])
    return None


def positive_int_or_percent(errs: Errors, field: str, value: int | str) -> None:
    """``ValidatePositiveIntOrPercent``: a non-negative int or an ``N%`` string."""
    if isinstance(value, str):
        if not _PERCENT_RE.fullmatch(value):
            raw_invalid(errs, field, go_int_or_string(value), PERCENT_ERROR)
    elif value < 0:
        errs.invalid(field, value, NEGATIVE)


def not_more_than_100_percent(errs: Errors, field: str, value: int | str) -> None:
    """``IsNotMoreThan100Percent`` (ints are not percentages)."""
    pct = percent_value(value)
    if pct is not None and pct > 100:
        raw_invalid(errs, field, go_int_or_string(value), "must not be greater than 100%")


def path_segment_errors(name: str) -> list[str]:
    """apimachinery ``IsValidPathSegmentName`` (RBAC names)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_LABEL_ERROR = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)


def dns1123_label_errors(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Label``."""
    msgs = [max_len_error(63)] if len(value.encode()) > 63 else []
    if not _DNS1123_LABEL_RE.fullmatch(value):
        msgs.append(_DNS1123_LABEL_ERROR)
    return msgs
