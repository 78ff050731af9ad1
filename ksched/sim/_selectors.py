"""Label and field selectors, parsed once per request into small predicate lists.

Label grammar (as ``k8s.io/apimachinery/pkg/labels``): ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
``k notin (a,b)``, ``k`` (exists), ``!k`` (does not exist), joined by commas. Field selectors take
``path=v``, ``path==v`` and ``path!=v`` on any dotted path (missing fields read as ``""``); upstream allows
only a per-resource set of paths, we are more lenient so ``kubectl describe`` queries on events work.
A resource served through several API versions passes a ``path_map`` that turns a path as the
request's version spells it into the stored object's path (``regarding.name`` -> ``involvedObject.name``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ksched.sim._status import StatusError

Predicate = Callable[[dict[str, Any]], bool]

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\((.*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _label_req(req: str) -> Predicate:
    m = _SET_RE.match(req)
    if m:
        key, op, values = m.group(1), m.group(3), {v.strip() for v in m.group(4).split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    m = _EQ_RE.match(req)
    if m:
        key, op, value = m.group(1), m.group(3), m.group(4)
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    m = _EXISTS_RE.match(req)
    if m:
        neg, key = m.group(1), m.group(2)
        if neg:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise StatusError(400, f"unable to parse requirement: {req!r}")


def parse_label_selector(text: str | None) -> Predicate | None:
    """A predicate over a labels dict, or ``None`` when the selector is empty (matches everything)."""
    if not text or not text.strip():
        return None
    preds = [_label_req(r) for r in _split_top(text)]
    if len(preds) == 1:
        return preds[0]
    return lambda labels: all(p(labels) for p in preds)


def field_value(obj: dict[str, Any], path: str | tuple[str, ...]) -> str:
    """The string value at a dotted path (``spec.nodeName``, or its parts), ``""`` when absent."""
    cur: Any = obj
    for part in path.split(".") if isinstance(path, str) else path:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur) if not isinstance(cur, (dict, list)) else ""


def _field_req(req: str, path_map: Callable[[str], str] | None = None) -> tuple[str, bool, str]:
    """(path, wants equality, value) of one ``path=value`` or ``path!=value`` requirement."""
    for op in ("!=", "==", "="):
        if op in req:
            path, value = (s.strip() for s in req.split(op, 1))
            if not path:
                break
            if path_map is not None:
                path = path_map(path)
            return path, op != "!=", value
    raise StatusError(400, f"invalid field selector: {req!r}: expected 'field=value' or 'field!=value'")


class _FieldSelector:
    """A parsed field selector: each path is split once and read once per object, however many
    requirements name it (the scheduler's ``status.phase!=Succeeded,status.phase!=Failed`` is
    evaluated twice per pod event on its watch)."""

    __slots__ = ("_groups",)

    def __init__(self, reqs: list[tuple[str, bool, str]]) -> None:
        by_path: dict[str, tuple[set[str], set[str]]] = {}
        for path, eq, value in reqs:
            want, refuse = by_path.setdefault(path, (set(), set()))
            (want if eq else refuse).add(value)
        self._groups = tuple(
            (tuple(path.split(".")), frozenset(want), frozenset(refuse))
            for path, (want, refuse) in by_path.items()
        )

    def __call__(self, obj: dict[str, Any]) -> bool:
        for parts, want, refuse in self._groups:
            v = field_value(obj, parts)
            if v in refuse:
                return False
            if want and (len(want) > 1 or v not in want):
                return False  # several different required values can never all hold
        return True


def parse_field_selector(text: str | None, path_map: Callable[[str], str] | None = None) -> Predicate | None:
    """A predicate over a whole object, or ``None`` when the selector is empty."""
    if not text or not text.strip():
        return None
    return _FieldSelector([_field_req(r, path_map) for r in text.split(",") if r.strip()])


class ObjectFilter:
    """Namespace + label + field selection of one list or watch request."""

    __slots__ = ("fields", "labels", "namespace")

    def __init__(self, namespace: str | None, labels: Predicate | None, fields: Predicate | None) -> None:
        self.namespace = namespace
        self.labels = labels
        self.fields = fields

    @classmethod
    def parse(
        cls,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        path_map: Callable[[str], str] | None = None,
    ) -> ObjectFilter:
        return cls(
            namespace, parse_label_selector(label_selector), parse_field_selector(field_selector, path_map)
        )

    @property
    def selects_all(self) -> bool:
        return self.namespace is None and self.labels is None and self.fields is None

    @property
    def has_selectors(self) -> bool:
        """A label or field selector (the namespace is part of the key range, not a selector)."""
        return self.labels is not None or self.fields is not None

    def matches(self, obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self.labels is not None and not self.labels(meta.get("labels") or {}):
            return False
        return self.fields is None or self.fields(obj)


def match_label_selector(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector object (matchLabels + matchExpressions); ``None`` matches nothing."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or ()
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
