"""Label key / value problems as config validation words them.

The checks are :mod:`ksched.model.labels` (apimachinery ``IsQualifiedName`` and
``IsValidLabelValue``). Config validation reports only the first problem, and without
``RegexError``'s ``(e.g. ..., regex used for validation is '...')`` tail; ``_CONFIG_WORDING`` maps
upstream's message to that shorter wording. Each function returns the problems found (empty when
the value is valid).
"""

from __future__ import annotations

from ksched.model import labels

_CONFIG_WORDING = {
    "prefix part " + labels.DNS1123_SUBDOMAIN_REGEX_ERROR: "prefix part " + labels.DNS1123_SUBDOMAIN_ERR_MSG,
    "name part " + labels.QUALIFIED_NAME_REGEX_ERROR: "a qualified name " + labels.QUALIFIED_NAME_ERR_MSG,
    labels.QUALIFIED_NAME_PARTS_ERROR: (
        f"a qualified name {labels.QUALIFIED_NAME_ERR_MSG}"
        " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    ),
    labels.LABEL_VALUE_REGEX_ERROR: labels.LABEL_VALUE_ERR_MSG,
}


def _first_problem(errs: list[str]) -> list[str]:
    return [_CONFIG_WORDING.get(errs[0], errs[0])] if errs else []


def qualified_name_problems(value: str) -> list[str]:
    """Problems with ``value`` as a label key / resource name (``example.com/name`` or ``name``)."""
    return _first_problem(labels.qualified_name_errors(value))


def label_value_problems(value: str) -> list[str]:
    """Problems with ``value`` as a label value (may be empty)."""
    return _first_problem(labels.label_value_errors(value))
