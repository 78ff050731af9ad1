"""Strict, path-aware readers for the raw (YAML/JSON) config tree.

Upstream decodes the file with a strict decoder: an unknown field, or a value of the wrong JSON
type, aborts loading before any defaulting or validation. These helpers do the same and raise a
:class:`ConfigError` naming the field path. They never coerce ("1" is not an integer, 1.5 is not
an integer, a number is not a duration).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ksched.bounded import preview
from ksched.config.durations import parse_go_duration
from ksched.errors import ConfigError

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_MISSING: Any = object()


def child(path: str, key: str) -> str:
    """``a.b`` (or ``b`` at the root)."""
    return f"{path}.{key}" if path else key


def index(path: str, i: int) -> str:
    """``a[3]``."""
    return f"{path}[{i}]"


def quote(value: object) -> str:
    """How messages show a value: strings double-quoted, numbers and booleans as in JSON."""
    if isinstance(value, int | float | bool | None) or (isinstance(value, str) and len(value) <= 200):
        try:
            return json.dumps(value, ensure_ascii=False)
        except ValueError:  # an int past Python's 4,300-digit str() limit
            return preview(value)
    if isinstance(value, str):
        return f"{json.dumps(value[:200], ensure_ascii=False)}… ({len(value) - 200:,} more)"
    return preview(value)  # never json.dumps a whole object: an alias tree expands without bound


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def wrong_type(path: str, expected: str, value: object) -> ConfigError:
    return ConfigError(path, f"expected {expected}, got {_kind(value)} {quote(value)}")


def mapping(value: object, path: str, allowed: Collection[str]) -> Mapping[str, Any]:
    """``value`` as an object whose keys are all in ``allowed`` (strict decoding)."""
    if not isinstance(value, Mapping):
        raise wrong_type(path, "an object", value)
    for key in value:
        if not isinstance(key, str):
            raise ConfigError(path, f"field names must be strings, got {quote(key)}")
        if key not in allowed:
            raise ConfigError(child(path, key), "unknown field")
    return value


def seq(m: Mapping[str, Any], key: str, path: str) -> Sequence[Any]:
    """A list field; missing or null is an empty list."""
    value = m.get(key)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise wrong_type(child(path, key), "a list", value)
    return value


def integer(m: Mapping[str, Any], key: str, path: str, default: Any = _MISSING, *, bits: int = 32) -> Any:
    """An integer field of a Go ``int32``/``int64``; missing or null gives ``default``."""
    value = m.get(key)
    p = child(path, key)
    if value is None:
        if default is _MISSING:
            raise ConfigError(p, "required field is missing")
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(p, "an integer", value)
    lo, hi = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    if not lo <= value <= hi:
        raise ConfigError(p, f"{quote(value)} is out of range for int{bits}")
    return value


def number(m: Mapping[str, Any], key: str, path: str, default: Any) -> Any:
    """A float field (Go ``float32``); integers are accepted."""
    value = m.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type(child(path, key), "a number", value)
    return float(value)


def boolean(m: Mapping[str, Any], key: str, path: str, default: Any) -> Any:
    value = m.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise wrong_type(child(path, key), "true or false", value)
    return value


def string(m: Mapping[str, Any], key: str, path: str, default: Any = "") -> Any:
    value = m.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise wrong_type(child(path, key), "a string", value)
    return value


def string_list(m: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    out = []
    for i, item in enumerate(seq(m, key, path)):
        if not isinstance(item, str):
            raise wrong_type(index(child(path, key), i), "a string", item)
        out.append(item)
    return tuple(out)


def duration(m: Mapping[str, Any], key: str, path: str, default: float) -> float:
    """A ``metav1.Duration`` field: a Go duration string, returned in seconds."""
    value = m.get(key)
    if value is None:
        return default
    p = child(path, key)
    if not isinstance(value, str):
        raise wrong_type(p, 'a duration string such as "15s"', value)
    try:
        return parse_go_duration(value)
    except ValueError:
        raise ConfigError(
            p, f'invalid duration {quote(value)}: use Go syntax such as "15s" or "1m30s"'
        ) from None
