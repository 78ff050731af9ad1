"""Scheduler extenders as the framework sees them: the :class:`Extender` Protocol and its runners.

Upstream: ``pkg/scheduler/framework/extender.go`` (the interface), ``pkg/scheduler/schedule_one.go``
(``findNodesThatPassExtenders``, the extender part of ``prioritizeNodes``, ``extendersBinding``)
and ``pkg/scheduler/framework/preemption/preemption.go`` (``callExtenders``). Extenders are global:
every profile's framework gets the same ones, in config order, through its Handle's services.

The framework knows no HTTP: an extender is anything with these methods. Calls are synchronous and
raise :class:`~ksched.errors.ExtenderError`; ``prioritize`` only *starts* its call and returns
something to wait on, so that a cycle's prioritizers run concurrently, as upstream's goroutines.

**Filter** runs after the Filter plugins (and ``percentageOfNodesToScore``), on the feasible rows
only, one request per extender, in config order, each seeing what the previous one left. Its
failures become the diagnosis as upstream's statuses: ``FailedAndUnresolvableNodes`` as
UnschedulableAndUnresolvable (preemption skips those nodes), ``FailedNodes`` as Unschedulable,
reasons of several extenders appended. They go into the cycle's per-plugin failures under the
name ``Extender`` (upstream ``framework.ExtenderName``), so the FailedScheduling message, the
PodScheduled condition and the queue's rejector plugins read them like any plugin's. An error of
a non-ignorable extender ends the cycle as an error; an ignorable one is skipped.

**Prioritize**: errors are ignored (logged), as upstream; each score counts
``score * weight * (MaxNodeScore / MaxExtenderPriority)``, added to the plugins' total.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.cache.reader import ClusterReader
from ksched.errors import ExtenderError
from ksched.framework.interface import MAX_NODE_SCORE, Code, FilterResult
from ksched.framework.result import CycleResult
from ksched.model.node import Node
from ksched.model.pod import Pod

log = logging.getLogger(__name__)
T = TypeVar("T")

EXTENDER_NAME = "Extender"
"""Upstream ``framework.ExtenderName``: the 'plugin' that rejected nodes an extender filtered out."""
MAX_EXTENDER_PRIORITY = 10
"""Upstream ``extenderv1.MaxExtenderPriority``."""
SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
_MAX_REASONS = 64
"""Reasons per failure bitset (:class:`FilterResult` keeps them in a uint64)."""


@dataclass(frozen=True, slots=True)
class FilterVerdict:
    """An extender's Filter answer: the nodes that pass, and why the others fail."""

    nodes: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=dict)
    failed_and_unresolvable: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods to evict on one node (most important first) and their PDB violations."""

    pods: tuple[Pod, ...]
    num_pdb_violations: int = 0


class PendingScores(Protocol):
    """A prioritize call under way."""

    def result(self) -> list[tuple[str, int]]:
        """``[(host, score 0..10)]``; raises :class:`ExtenderError`."""
        ...


@dataclass(frozen=True, slots=True)
class DoneScores:
    """A prioritize call that finished at once (or failed: ``error``)."""

    scores: list[tuple[str, int]]
    error: ExtenderError | None = None

    def result(self) -> list[tuple[str, int]]:
        if self.error is not None:
            raise self.error
        return self.scores


class Extender(Protocol):
    """Upstream ``framework.Extender``."""

    @property
    def name(self) -> str: ...
    @property
    def weight(self) -> int: ...
    def is_interested(self, pod: Pod) -> bool: ...
    def is_filter(self) -> bool: ...
    def is_prioritizer(self) -> bool: ...
    def is_binder(self) -> bool: ...
    def supports_preemption(self) -> bool: ...
    def is_ignorable(self) -> bool: ...
    def filter(self, pod: Pod, nodes: Sequence[Node]) -> FilterVerdict: ...
    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> PendingScores: ...
    def bind(self, pod: Pod, node: str) -> None: ...
    def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], cluster: ClusterReader
    ) -> dict[str, Victims]: ...


def interested_in(managed: frozenset[str], pod: Pod) -> bool:
    """Upstream ``IsInterested``: no managed resources, or the pod asks for one of them.

    Upstream looks at the names in every container's and init container's requests and limits;
    the pod record keeps the effective requests, whose names are those of the requests (the API
    server copies a limit without request into the request)."""
    return not managed or any(r in managed for r in pod.requests)


def _guarded(ext: Extender, verb: str, call: Callable[..., T], *args: Any) -> T:
    """``call()``, an extender's failure of any kind coming out as an :class:`ExtenderError` (an
    extender's bug must not take the cycle down with it)."""
    try:
        return call(*args)
    except ExtenderError:
        raise
    except Exception as exc:
        log.exception("extender %s failed in %s", ext.name, verb)
        raise ExtenderError(ext.name, verb, f'extender "{ext.name}": {verb} failed: {exc!r}') from exc


def _start_prioritize(ext: Extender, pod: Pod, nodes: Sequence[Node]) -> PendingScores:
    try:
        return _guarded(ext, "prioritize", ext.prioritize, pod, nodes)
    except ExtenderError as exc:
        return DoneScores([], exc)


# ---------------------------------------------------------------------- Filter
@dataclass(slots=True)
class _Failures:
    """Per node row, the extenders' reasons in order, with their codes."""

    by_row: dict[int, list[tuple[str, Code]]] = field(default_factory=dict)

    def add(self, row: int, reason: str, code: Code) -> None:
        self.by_row.setdefault(row, []).append((reason, code))

    def results(self, n_rows: int) -> list[FilterResult]:
        """The failures as bitsets of at most :data:`_MAX_REASONS` distinct reasons each."""
        kinds: dict[tuple[str, Code], int] = {}
        for reasons in self.by_row.values():
            for kind in reasons:
                kinds.setdefault(kind, len(kinds))
        out = []
        ordered = list(kinds)
        for start in range(0, len(ordered), _MAX_REASONS):
            part = ordered[start : start + _MAX_REASONS]
            bit = {kind: i for i, kind in enumerate(part)}
            failed = np.zeros(n_rows, dtype=np.uint64)
            for row, reasons in self.by_row.items():
                for kind in reasons:
                    if kind in bit:
                        failed[row] |= np.uint64(1 << bit[kind])
            out.append(FilterResult(failed, tuple(r for r, _ in part), tuple(c for _, c in part)))
        return out


def find_nodes_passing_extenders(
    extenders: Sequence[Extender], pod: Pod, cluster: ClusterCache, feasible: np.ndarray, result: CycleResult
) -> tuple[np.ndarray, ExtenderError | None]:
    """Upstream ``findNodesThatPassExtenders`` over the rows of ``feasible``: the rows left (a new
    mask when an extender changed it, else ``feasible`` itself), or the error that ends the cycle.
    The extenders' failures are appended to ``result.filters``."""
    rows = np.flatnonzero(feasible)
    start = rows.size
    nodes = cluster.nodes
    failures = _Failures()
    for ext in extenders:
        if rows.size == 0:
            break
        if not ext.is_filter() or not ext.is_interested(pod):
            continue
        try:
            listed = _nodes(cluster, rows)
            verdict = _guarded(ext, "filter", ext.filter, pod, listed)
        except ExtenderError as exc:
            if ext.is_ignorable():
                log.info(
                    "skipping extender %s as it returned error and has ignorable flag set: %s", ext.name, exc
                )
                continue
            return feasible, exc
        _record(verdict, nodes.row_of, failures)
        if len(verdict.nodes) == len(listed) and list(verdict.nodes) == [n.name for n in listed]:
            continue  # every node passed, in the order sent: the usual answer, no lookups needed
        sent = np.zeros(feasible.shape[0], dtype=bool)
        sent[rows] = True
        kept = _rows_of(cluster, verdict.nodes)
        rows = np.unique(kept[sent[kept]])  # an extender keeps a subset of what it was sent, never more
    if rows.size == start and not failures.by_row:
        return feasible, None
    # Upstream adds ExtenderName to the rejector plugins whenever the extenders narrowed the nodes,
    # with reasons or without: the entry says so even when it carries no failure bits.
    results = failures.results(feasible.shape[0]) or [FilterResult.all_pass()]
    result.filters.extend((EXTENDER_NAME, fr) for fr in results)
    out = np.zeros_like(feasible)
    out[rows] = True
    return out, None


def _record(verdict: FilterVerdict, row_of: Mapping[str, int], failures: _Failures) -> None:
    """Upstream's merge of one extender's failed-node maps into the statuses."""
    for name, msg in verdict.failed_and_unresolvable.items():
        row = row_of.get(name)
        if row is not None:
            failures.add(row, msg, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    for name, msg in verdict.failed.items():
        row = row_of.get(name)
        if row is not None and name not in verdict.failed_and_unresolvable:
            failures.add(row, msg, Code.UNSCHEDULABLE)


# ---------------------------------------------------------------------- Prioritize
def extender_scores(
    extenders: Sequence[Extender], pod: Pod, cluster: ClusterCache, feasible: np.ndarray
) -> tuple[np.ndarray, list[tuple[str, int, np.ndarray]]] | None:
    """The extender part of upstream ``prioritizeNodes``: the combined extender score per row
    (int64, 0 off ``feasible``) and each extender's raw scores with its weight; None when no
    interested prioritizer answered."""
    wanted = [e for e in extenders if e.is_prioritizer() and e.is_interested(pod)]
    if not wanted:
        return None
    sent_rows = np.flatnonzero(feasible)
    listed = _nodes(cluster, sent_rows)
    sent_names = [n.name for n in listed]
    pending = [(e, _start_prioritize(e, pod, listed)) for e in wanted]  # all under way before waiting on one
    total = np.zeros(feasible.shape[0], dtype=np.int64)
    parts: list[tuple[str, int, np.ndarray]] = []
    for ext, call in pending:
        try:
            got = _guarded(ext, "prioritize", call.result)
        except ExtenderError as exc:
            # Upstream: prioritization errors are ignored; the plugins and other extenders decide.
            log.info("extender %s failed to prioritize pod %s: %s", ext.name, pod.key, exc)
            continue
        raw = _raw_scores(cluster, got, feasible, sent_rows, sent_names)
        total += raw * (ext.weight * SCORE_SCALE)
        parts.append((ext.name, ext.weight, raw))
    return (total, parts) if parts else None


def _raw_scores(
    cluster: ClusterCache,
    got: list[tuple[str, int]],
    feasible: np.ndarray,
    sent_rows: np.ndarray,
    sent_names: list[str],
) -> np.ndarray:
    """One extender's scores by row (hosts it was not sent count nothing; a repeated host adds up,
    as upstream's map sums them)."""
    raw = np.zeros(feasible.shape[0], dtype=np.int64)
    hosts = [host for host, _ in got]
    scores = np.fromiter((score for _, score in got), dtype=np.int64, count=len(got))
    if hosts == sent_names:  # the usual answer: every node, in the order sent
        raw[sent_rows] = scores
        return raw
    rows = _rows_of(cluster, hosts, keep_unknown=True)
    ok = rows >= 0
    ok[ok] = feasible[rows[ok]]
    np.add.at(raw, rows[ok], scores[ok])
    return raw


def _nodes(cluster: ClusterCache, rows: np.ndarray) -> list[Node]:
    node = cluster.nodes.node
    return [node(r) for r in rows.tolist()]


def _rows_of(cluster: ClusterCache, names: Sequence[str], *, keep_unknown: bool = False) -> np.ndarray:
    """The rows of ``names`` in their order; an unknown name is -1 (``keep_unknown``) or left out."""
    get = cluster.nodes.row_of.get
    rows = np.fromiter((get(name, -1) for name in names), dtype=np.intp, count=len(names))
    return rows if keep_unknown else rows[rows >= 0]


# ---------------------------------------------------------------------- Bind
def binder_for(extenders: Sequence[Extender], pod: Pod) -> list[Extender]:
    """The extenders upstream's ``extendersBinding`` tries for ``pod``, in order: each interested
    binder; an ignorable one that fails hands over to the next, then to the Bind plugins."""
    return [e for e in extenders if e.is_binder() and e.is_interested(pod)]


# ---------------------------------------------------------------------- Preemption
def call_extenders(
    extenders: Sequence[Extender], pod: Pod, cluster: ClusterReader, candidates: Mapping[str, Victims]
) -> tuple[dict[str, Victims], ExtenderError | None]:
    """Upstream ``callExtenders``: each interested extender that supports preemption may trim the
    candidates and their victims; an error of a non-ignorable one ends the preemption."""
    victims = dict(candidates)
    if not victims:
        return victims, None
    for ext in extenders:
        if not ext.supports_preemption() or not ext.is_interested(pod):
            continue
        try:
            got = _guarded(ext, "preempt", ext.process_preemption, pod, victims, cluster)
        except ExtenderError as exc:
            if ext.is_ignorable():
                log.info(
                    "skipped extender %s as it returned error and has ignorable flag set: %s", ext.name, exc
                )
                continue
            return {}, exc
        for node, vs in list(got.items()):
            if vs.pods:
                continue
            if ext.is_ignorable():
                log.info("ignored node %s for which extender %s didn't report victims", node, ext.name)
                del got[node]
                continue
            return {}, ExtenderError(
                ext.name, "preempt", f'expected at least one victim pod on node "{node}"'
            )
        victims = got
        if not victims:
            break
    return victims, None
