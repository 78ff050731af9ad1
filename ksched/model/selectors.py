"""Node selectors, label selectors, taints and tolerations as small frozen records, parsed once from API JSON.

Matching rules follow upstream exactly (``component-helpers/scheduling/corev1/nodeaffinity`` and
``core/v1/toleration.go``); the records only hold data, and the plain-Python matchers here are the
readable reference that the vectorized plugins are tested against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ksched.errors import ObjectError
from ksched.model import _fields as f
from ksched.model.labels import (  # parse_go_int64 also stays importable from here
    label_value_errors,
    parse_go_int64,
    qualified_name_errors,
)

NODE_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` / ``matchFields`` entry: ``key operator values``."""

    key: str
    operator: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions and fields are ANDed; an empty term matches nothing."""

    match_expressions: tuple[Requirement, ...]
    match_fields: tuple[Requirement, ...]

    @property
    def empty(self) -> bool:
        return not self.match_expressions and not self.match_fields


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    """A ``preferredDuringSchedulingIgnoredDuringExecution`` entry."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    """Required terms are ORed (``None`` means no requirement); preferred terms add their weight."""

    required: tuple[NodeSelectorTerm, ...] | None
    preferred: tuple[PreferredTerm, ...]


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """Upstream ``Toleration.ToleratesTaint`` (comparison operators are gated off in v1.35)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


def _read_requirement(raw: Any, obj: str, field: str) -> Requirement:
    """A ``{key, operator, values}`` mapping read as strings; the caller checks the operator."""
    m = f.mapping(raw, obj, field)
    key = f.string(m.get("key"), obj, f"{field}.key")
    op = f.string(m.get("operator"), obj, f"{field}.operator")
    values = tuple(
        f.string(v, obj, f"{field}.values[{i}]")
        for i, v in enumerate(f.sequence(m.get("values"), obj, f"{field}.values"))
    )
    return Requirement(key, op, values)


def parse_requirement(raw: Any, obj: str, field: str, *, fields: bool = False) -> Requirement:
    req = _read_requirement(raw, obj, field)
    if req.operator not in NODE_SELECTOR_OPERATORS:
        raise ObjectError(obj, f"{field}.operator", f'unsupported operator "{req.operator}"')
    if fields and req.key != "metadata.name":
        raise ObjectError(obj, f"{field}.key", f'unsupported field "{req.key}" (only metadata.name)')
    return req


def parse_term(raw: Any, obj: str, field: str) -> NodeSelectorTerm:
    m = f.mapping(raw, obj, field)
    exprs = tuple(
        parse_requirement(r, obj, f"{field}.matchExpressions[{i}]")
        for i, r in enumerate(f.sequence(m.get("matchExpressions"), obj, f"{field}.matchExpressions"))
    )
    flds = tuple(
        parse_requirement(r, obj, f"{field}.matchFields[{i}]", fields=True)
        for i, r in enumerate(f.sequence(m.get("matchFields"), obj, f"{field}.matchFields"))
    )
    return NodeSelectorTerm(exprs, flds)


def parse_node_affinity(raw: Any, obj: str, field: str) -> NodeAffinity | None:
    """Parse ``affinity.nodeAffinity``; ``None`` when it has neither part."""
    m = f.mapping(raw, obj, field)
    if not m:
        return None
    required = None
    req_raw = m.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req_raw is not None:
        rf = f"{field}.requiredDuringSchedulingIgnoredDuringExecution"
        terms = f.sequence(
            f.mapping(req_raw, obj, rf).get("nodeSelectorTerms"), obj, f"{rf}.nodeSelectorTerms"
        )
        required = tuple(parse_term(t, obj, f"{rf}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))
    pf = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = []
    for i, p in enumerate(f.sequence(m.get("preferredDuringSchedulingIgnoredDuringExecution"), obj, pf)):
        pm = f.mapping(p, obj, f"{pf}[{i}]")
        weight = f.integer(pm.get("weight"), obj, f"{pf}[{i}].weight", lo=0, hi=100)
        preferred.append(
            PreferredTerm(weight, parse_term(pm.get("preference"), obj, f"{pf}[{i}].preference"))
        )
    if required is None and not preferred:
        return None
    return NodeAffinity(required, tuple(preferred))


def parse_taint(raw: Any, obj: str, field: str) -> Taint:
    m = f.mapping(raw, obj, field)
    key = f.string(m.get("key"), obj, f"{field}.key")
    if not key:
        raise ObjectError(obj, f"{field}.key", "a taint needs a key")
    effect = f.string(m.get("effect"), obj, f"{field}.effect")
    if effect not in TAINT_EFFECTS:
        raise ObjectError(obj, f"{field}.effect", f'unsupported taint effect "{effect}"')
    return Taint(key, f.string(m.get("value"), obj, f"{field}.value"), effect)


def parse_toleration(raw: Any, obj: str, field: str) -> Toleration:
    m = f.mapping(raw, obj, field)
    return Toleration(
        f.string(m.get("key"), obj, f"{field}.key"),
        f.string(m.get("operator"), obj, f"{field}.operator"),
        f.string(m.get("value"), obj, f"{field}.value"),
        f.string(m.get("effect"), obj, f"{field}.effect"),
    )


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """Reference semantics of one node selector requirement against a label map."""
    present = req.key in labels
    value = labels.get(req.key, "")
    op = req.operator
    if op == "In":
        return present and value in req.values
    if op == "NotIn":
        return not present or value not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    # Gt / Lt: exactly one integer value; the node's label must parse as an integer.
    if not present or len(req.values) != 1:
        return False
    want = parse_go_int64(req.values[0])
    have = parse_go_int64(value)
    if want is None or have is None:
        return False
    return have > want if op == "Gt" else have < want


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """A term matches when every expression and every field requirement holds; empty never matches."""
    if term.empty:
        return False
    if not all(requirement_matches(r, labels) for r in term.match_expressions):
        return False
    fields = {"metadata.name": node_name}
    return all(requirement_matches(r, fields) for r in term.match_fields)


def required_matches(
    terms: tuple[NodeSelectorTerm, ...] | None, labels: Mapping[str, str], node_name: str
) -> bool:
    """ORed terms; ``None`` (no requirement) matches every node."""
    if terms is None:
        return True
    return any(term_matches(t, labels, node_name) for t in terms)


# ---------------------------------------------------------------------------------------------------
# metav1.LabelSelector (pod affinity terms, namespaceSelector, topology spread constraints)

LABEL_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed ``metav1.LabelSelector``: ``match_labels`` and ``match_expressions``, ANDed.

    A *nil* selector is represented by ``None`` wherever a selector may be absent and matches
    nothing; an empty selector (``LabelSelector((), ())``, from ``{}``) matches everything. The
    record is hashable so that the cache can memoize what it matches. ``match_labels`` is sorted.
    """

    match_labels: tuple[tuple[str, str], ...]
    match_expressions: tuple[Requirement, ...]

    @property
    def empty(self) -> bool:
        """No requirement at all: matches every label set (upstream ``labels.Everything()``)."""
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Plain-Python reference: every ``matchLabels`` pair and every expression holds."""
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(requirement_matches(r, labels) for r in self.match_expressions)


EVERYTHING = LabelSelector((), ())
"""The empty selector ``{}``."""


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``None`` (nil) matches nothing; otherwise :meth:`LabelSelector.matches`."""
    return selector is not None and selector.matches(labels)


def _check_label_key(key: str, obj: str, field: str) -> None:
    """Upstream ``validateLabelKey`` (``IsQualifiedName``): ``[prefix/]name``, in this module's words.

    The text after the last ``/`` is the name part; when it is valid on its own, the prefix is to blame.
    """
    if not qualified_name_errors(key):
        return
    if qualified_name_errors(key.rpartition("/")[2]):
        problem = "name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    else:
        problem = "prefix part must be a DNS subdomain (lowercase, at most 253 characters)"
    raise ObjectError(obj, field, f"invalid label key {key!r}: {problem}")


def _check_label_value(value: str, obj: str, field: str) -> None:
    """Upstream ``IsValidLabelValue``: empty, or at most 63 characters like a name part."""
    if label_value_errors(value):
        raise ObjectError(
            obj,
            field,
            f"invalid label value {value!r}: at most 63 alphanumerics, '-', '_' or '.',"
            " starting and ending alphanumeric",
        )


def parse_label_selector(raw: Any, obj: str, field: str) -> LabelSelector | None:
    """Parse a ``metav1.LabelSelector``; JSON ``null`` / absent gives ``None`` (matches nothing).

    Follows upstream ``LabelSelectorAsSelector``: operators are ``In``, ``NotIn``, ``Exists`` and
    ``DoesNotExist``; ``In``/``NotIn`` need at least one value, ``Exists``/``DoesNotExist`` take
    none; keys and values must be valid label keys and values. Errors name ``obj`` and the field.
    """
    if raw is None:
        return None
    m = f.mapping(raw, obj, field)
    labels = f.string_map(m.get("matchLabels"), obj, f"{field}.matchLabels")
    for key, value in labels.items():
        _check_label_key(key, obj, f"{field}.matchLabels")
        _check_label_value(value, obj, f"{field}.matchLabels[{key!r}]")
    exprs = []
    ef = f"{field}.matchExpressions"
    for i, r in enumerate(f.sequence(m.get("matchExpressions"), obj, ef)):
        rf = f"{ef}[{i}]"
        req = _read_requirement(r, obj, rf)
        key, op, values = req.key, req.operator, req.values
        if op not in LABEL_SELECTOR_OPERATORS:
            raise ObjectError(obj, f"{rf}.operator", f"{op!r} is not a valid label selector operator")
        _check_label_key(key, obj, f"{rf}.key")
        if op in ("In", "NotIn") and not values:
            raise ObjectError(obj, f"{rf}.values", f"values set can't be empty for operator {op}")
        if op in ("Exists", "DoesNotExist") and values:
            raise ObjectError(obj, f"{rf}.values", f"values set must be empty for operator {op}")
        for j, v in enumerate(values):
            _check_label_value(v, obj, f"{rf}.values[{j}]")
        exprs.append(req)
    return LabelSelector(tuple(sorted(labels.items())), tuple(exprs))
