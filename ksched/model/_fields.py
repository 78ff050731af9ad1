"""Typed access to raw API JSON that fails with an error naming the object and the field.

API objects arrive as dicts decoded by orjson or PyYAML. A field of the wrong type must not surface
as a ``KeyError`` or ``AttributeError`` deep inside the scheduler: these helpers check each field
once, at the edge, and raise :class:`~ksched.errors.ObjectError` with the JSON path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ksched.bounded import preview
from ksched.errors import ObjectError

_EMPTY: Mapping[str, Any] = {}


def mapping(raw: Any, obj: str, field: str) -> Mapping[str, Any]:
    """``raw`` as a mapping; ``None`` (absent) reads as empty."""
    if type(raw) is dict:  # the common case, without the slower ABC check
        return raw
    if raw is None:
        return _EMPTY
    if not isinstance(raw, Mapping):
        raise ObjectError(obj, field, f"expected an object, got {type(raw).__name__} {preview(raw)}")
    return raw


def sequence(raw: Any, obj: str, field: str) -> Sequence[Any]:
    """``raw`` as a list; ``None`` (absent) reads as empty."""
    if type(raw) is list:
        return raw
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise ObjectError(obj, field, f"expected a list, got {type(raw).__name__} {preview(raw)}")
    return raw


def string(raw: Any, obj: str, field: str, default: str = "") -> str:
    """``raw`` as a string; ``None`` (absent) reads as ``default``."""
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise ObjectError(obj, field, f"expected a string, got {type(raw).__name__} {preview(raw)}")
    return raw


def integer(
    raw: Any, obj: str, field: str, default: int = 0, *, lo: int = -(2**63), hi: int = 2**63 - 1
) -> int:
    """``raw`` as an int within ``[lo, hi]``; ``None`` (absent) reads as ``default``."""
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        if isinstance(raw, float) and raw.is_integer() and not lo <= raw <= hi:
            # orjson reads an integer literal past 64 bits as a float: it is out of range, not a float
            raise ObjectError(obj, field, f"{raw:.0f} is {_out_of(lo, hi)}")
        raise ObjectError(obj, field, f"expected an integer, got {type(raw).__name__} {preview(raw)}")
    if not lo <= raw <= hi:
        raise ObjectError(obj, field, f"{preview(raw)} is {_out_of(lo, hi)}")
    return raw


def _out_of(lo: int, hi: int) -> str:
    """``out of range for int32`` for a Go integer type's bounds, ``out of range [lo, hi]`` else."""
    for bits in (32, 64):
        if (lo, hi) == (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1):
            return f"out of range for int{bits}"
    return f"out of range [{lo}, {hi}]"


def boolean(raw: Any, obj: str, field: str, default: bool = False) -> bool:
    """``raw`` as a bool; ``None`` (absent) reads as ``default``."""
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise ObjectError(obj, field, f"expected true or false, got {preview(raw)}")
    return raw


def string_map(raw: Any, obj: str, field: str) -> dict[str, str]:
    """A ``map[string]string`` such as labels or nodeSelector."""
    if raw is None:  # absent, as nodeSelector mostly is
        return {}
    m = mapping(raw, obj, field)
    for key, value in m.items():
        if not isinstance(key, str) or not isinstance(value, str):
            problem = f"expected a string value, got {preview(value)}"
            raise ObjectError(obj, f"{field}[{preview(key)}]", problem)
    return dict(m)
