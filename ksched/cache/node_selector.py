"""Node selector terms, checked like upstream parses them and evaluated over every node row at once.

Shared by NodeAffinity and PodTopologySpread (``nodeAffinityPolicy: Honor``), which may not import
each other, so it lives with the node table it reads.

Upstream (``component-helpers/scheduling/corev1/nodeaffinity``) turns each term into a label
selector and a field selector with ``labels.NewRequirement``, which validates the key, the values
and the operator's arity. A term that fails to parse never matches (required terms) or is an error
(preferred terms). The API server does not validate everything that parsing does — e.g. ``NotIn``
values are not checked as label values — so the scheduler really does see such terms; this module
reproduces those checks and their messages.

Matching is vectorized over the node table: a label requirement is a comparison on the interned
label-value column of its key, ``metadata.name`` is a row lookup, ``Gt``/``Lt`` parse label values
exactly like Go's ``strconv.ParseInt(s, 10, 64)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ksched.cache.node_table import NodeTable
from ksched.model.labels import label_value_errors, parse_go_int64, qualified_name_errors
from ksched.model.selectors import NodeSelectorTerm, PreferredTerm, Requirement

NAME_FIELD = "metadata.name"


# --------------------------------------------------------------------------- upstream validation
def _invalid(path: str, value: object, detail: str) -> str:
    """apimachinery ``field.Invalid(...).Error()``: strings quoted, lists as JSON."""
    if isinstance(value, str):
        shown = json.dumps(value, ensure_ascii=False)
    else:
        shown = json.dumps(list(value) or None, separators=(",", ":"), ensure_ascii=False)  # type: ignore[call-overload]
    return f"{path}: Invalid value: {shown}: {detail}"


def label_requirement_errors(req: Requirement, path: str) -> list[str]:
    """What ``labels.NewRequirement`` reports for one ``matchExpressions`` entry, in its order."""
    errs: list[str] = []
    key_errs = qualified_name_errors(req.key)
    if key_errs:
        errs.append(_invalid(f"{path}.key", req.key, "; ".join(key_errs)))
    op, values = req.operator, req.values
    vpath = f"{path}.values"
    if op in ("In", "NotIn"):
        if not values:
            errs.append(_invalid(vpath, values, "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(_invalid(vpath, values, "values set must be empty for exists and does not exist"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(_invalid(vpath, values, "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(values):
            if parse_go_int64(v) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(_invalid(f"{vpath}[{i}]", v, detail))
    else:
        errs.append(f'{path}.operator: Unsupported value: "{op}"')
    for i, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            errs.append(_invalid(f"{path}.values[{i}]", v, "; ".join(value_errs)))
    return errs


def field_requirement_error(req: Requirement) -> str | None:
    """What ``nodeSelectorRequirementsAsFieldSelector`` reports for one ``matchFields`` entry."""
    if req.operator in ("In", "NotIn"):
        if len(req.values) != 1:
            count = len(req.values)
            return f'unexpected number of value ({count}) for node field selector operator "{req.operator}"'
        return None
    return f'"{req.operator}" is not a valid node field selector operator'


def aggregate_message(messages: Sequence[str]) -> str:
    """apimachinery ``utilerrors.NewAggregate(...).Error()``: de-duplicated, bracketed when several."""
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


# --------------------------------------------------------------------------- compiled terms
@dataclass(frozen=True, slots=True)
class CompiledTerm:
    """A non-empty term as upstream parsed it; ``error`` set means it never matches."""

    match_expressions: tuple[Requirement, ...]
    match_fields: tuple[Requirement, ...]
    error: str | None = None


def compile_term(term: NodeSelectorTerm, path: str) -> CompiledTerm:
    """Upstream ``newNodeSelectorTerm``: the first bad expression stops parsing, then the first bad field."""
    for j, req in enumerate(term.match_expressions):
        errs = label_requirement_errors(req, f"{path}.matchExpressions[{j}]")
        if errs:
            return CompiledTerm(term.match_expressions, term.match_fields, aggregate_message(errs))
    for req in term.match_fields:
        err = field_requirement_error(req)
        if err is not None:
            return CompiledTerm(term.match_expressions, term.match_fields, err)
    return CompiledTerm(term.match_expressions, term.match_fields)


def compile_required(terms: Sequence[NodeSelectorTerm]) -> tuple[CompiledTerm, ...]:
    """Upstream ``NewLazyErrorNodeSelector``: empty terms dropped (they match nothing)."""
    return tuple(compile_term(t, f"nodeSelectorTerms[{i}]") for i, t in enumerate(terms) if not t.empty)


@dataclass(frozen=True, slots=True)
class CompiledPreferred:
    """Upstream ``PreferredSchedulingTerms``: weighted terms, zero-weight and empty ones dropped."""

    terms: tuple[tuple[int, CompiledTerm], ...]
    errors: tuple[str, ...] = field(default=())

    @property
    def error(self) -> str | None:
        return aggregate_message(self.errors) if self.errors else None


def compile_preferred(preferred: Sequence[PreferredTerm]) -> CompiledPreferred:
    terms: list[tuple[int, CompiledTerm]] = []
    errors: list[str] = []
    for i, p in enumerate(preferred):
        if p.weight == 0 or p.term.empty:
            continue
        compiled = compile_term(p.term, f"[{i}]")
        if compiled.error is not None:
            errors.append(compiled.error)
        else:
            terms.append((p.weight, compiled))
    return CompiledPreferred(tuple(terms), tuple(errors))


# --------------------------------------------------------------------------- vectorized matching
class RowMatcher:
    """Evaluates requirements and terms over rows ``[0, n_rows)`` of one node table, memoized.

    Create one per cycle: masks are cached by requirement, and the node table does not change
    during a cycle (the scheduling thread is its only writer).
    """

    def __init__(self, nodes: NodeTable) -> None:
        self.nodes = nodes
        self.n = nodes.n_rows
        self._memo: dict[tuple[str, str, str, tuple[str, ...]], np.ndarray] = {}
        self._int_columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _value_ids(self, values: Sequence[str]) -> np.ndarray:
        """Interned ids of ``values`` (unknown ones dropped); call after building the key's column."""
        lookup = self.nodes.label_values.lookup
        ids = [vid for vid in (lookup(v) for v in values) if vid >= 0]
        return np.asarray(ids, dtype=np.int32)

    def int_column(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Label ``key`` parsed like Go's ``ParseInt``: ``(values, parsed_ok)`` per row."""
        hit = self._int_columns.get(key)
        if hit is not None:
            return hit
        col = self.nodes.label_column(key)
        values = np.zeros(self.n, dtype=np.int64)
        ok = np.zeros(self.n, dtype=np.bool_)
        present = col >= 0
        if present.any():
            uniq, inverse = np.unique(col[present], return_inverse=True)
            texts = self.nodes.label_values.values
            parsed = [parse_go_int64(texts[int(u)]) for u in uniq]
            good = np.array([p is not None for p in parsed], dtype=np.bool_)
            nums = np.array([p if p is not None else 0 for p in parsed], dtype=np.int64)
            rows = np.flatnonzero(present)
            values[rows] = nums[inverse]
            ok[rows] = good[inverse]
        self._int_columns[key] = (values, ok)
        return values, ok

    def label_requirement(self, req: Requirement) -> np.ndarray:
        """Boolean rows matching one (valid) ``matchExpressions`` entry."""
        memo_key = ("e", req.key, req.operator, req.values)
        hit = self._memo.get(memo_key)
        if hit is not None:
            return hit
        op = req.operator
        if op in ("Gt", "Lt"):
            bound = parse_go_int64(req.values[0])
            values, ok = self.int_column(req.key)
            assert bound is not None  # compile_term rejected anything else
            mask = ok & ((values > bound) if op == "Gt" else (values < bound))
        else:
            col = self.nodes.label_column(req.key)
            if op == "Exists":
                mask = col >= 0
            elif op == "DoesNotExist":
                mask = col < 0
            else:
                ids = self._value_ids(req.values)
                hit_in = np.isin(col, ids) if ids.size else np.zeros(self.n, dtype=np.bool_)
                mask = hit_in if op == "In" else ~hit_in
        self._memo[memo_key] = mask
        return mask

    def field_requirement(self, req: Requirement) -> np.ndarray:
        """Boolean rows matching one (valid) ``metadata.name`` In/NotIn entry with a single value."""
        memo_key = ("f", req.key, req.operator, req.values)
        hit = self._memo.get(memo_key)
        if hit is not None:
            return hit
        mask = np.zeros(self.n, dtype=np.bool_)
        row = self.nodes.row_of.get(req.values[0]) if req.key == NAME_FIELD else None
        if row is not None and row < self.n:
            mask[row] = True
        if req.operator == "NotIn":
            mask = ~mask
        self._memo[memo_key] = mask
        return mask

    def term(self, term: CompiledTerm) -> np.ndarray:
        """Rows where every expression and every field of ``term`` holds; none if it failed to parse."""
        if term.error is not None:
            return np.zeros(self.n, dtype=np.bool_)
        mask = np.ones(self.n, dtype=np.bool_)
        for req in term.match_expressions:
            mask &= self.label_requirement(req)
        for req in term.match_fields:
            mask &= self.field_requirement(req)
        return mask

    def required(self, terms: tuple[CompiledTerm, ...] | None) -> np.ndarray:
        """ORed terms; None (no requirement) matches every row, no terms match none."""
        if terms is None:
            return np.ones(self.n, dtype=np.bool_)
        mask = np.zeros(self.n, dtype=np.bool_)
        for t in terms:
            mask |= self.term(t)
        return mask

    def node_selector(self, selector: Mapping[str, str]) -> np.ndarray:
        """``spec.nodeSelector``: every key present with exactly that value."""
        mask = np.ones(self.n, dtype=np.bool_)
        for key, value in selector.items():
            col = self.nodes.label_column(key)  # builds the column first: that interns the node values
            vid = self.nodes.label_values.lookup(value)
            if vid < 0:
                return np.zeros(self.n, dtype=np.bool_)
            mask &= col == vid
        return mask

    def preferred_scores(self, preferred: Sequence[tuple[int, CompiledTerm]]) -> np.ndarray:
        """Sum of the weights of matching terms, per row."""
        total = np.zeros(self.n, dtype=np.int64)
        for weight, t in preferred:
            total += weight * self.term(t)
        return total
