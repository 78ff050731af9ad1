"""Kubernetes name syntax checks used by config validation (label keys and values).

Mirrors ``k8s.io/apimachinery/pkg/util/validation`` ``IsQualifiedName`` and ``IsValidLabelValue``:
a qualified name is ``[prefix/]name`` with a DNS-1123 subdomain prefix (at most 253 characters)
and a name part of at most 63 alphanumerics, ``-``, ``_`` or ``.``, starting and ending with an
alphanumeric. Each function returns the problems found (empty when the value is valid).
"""

from __future__ import annotations

import re

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_NAME_CHARS = (
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def qualified_name_problems(value: str) -> list[str]:
    """Problems with ``value`` as a label key / resource name (``example.com/name`` or ``name``)."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        if len(prefix) > 253:
            return ["prefix part must be no more than 253 characters"]
        if not _DNS1123_SUBDOMAIN.match(prefix):
            return [
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character"
            ]
    else:
        return [_NAME_CHARS + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        return ["name part must be non-empty"]
    if len(name) > 63:
        return ["name part must be no more than 63 characters"]
    if not _NAME_PART.match(name):
        return [_NAME_CHARS]
    return []


def label_value_problems(value: str) -> list[str]:
    """Problems with ``value`` as a label value (may be empty)."""
    if len(value) > 63:
        return ["must be no more than 63 characters"]
    if not _LABEL_VALUE.match(value):
        return [
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        ]
    return []
