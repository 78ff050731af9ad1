"""NodeAffinity prefilter, filter and score over every node at once.

The scheduler-enforced ``addedAffinity`` (NodeAffinityArgs) is parsed once when the plugin is
built; a pod's terms are parsed per cycle. Masks for each requirement are computed on the node
table's interned label columns and memoized for the cycle, so the filter and the score share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from ksched.errors import ConfigError, ObjectError
from ksched.framework import names
from ksched.framework.api import (
    SKIP,
    SUCCESS,
    ClusterEventSpec,
    ClusterReader,
    Code,
    CycleState,
    FilterResult,
    Handle,
    PreFilterResult,
    Scores,
    Status,
    cluster_event,
    error,
    unschedulable,
)
from ksched.framework.interface import HintFn
from ksched.framework.normalize import default_normalize_score
from ksched.framework.plugins.nodeaffinity._selector import (
    NAME_FIELD,
    CompiledPreferred,
    CompiledTerm,
    RowMatcher,
    compile_preferred,
    compile_required,
)
from ksched.framework.plugins.nodeaffinity.hints import AfterNodeChange
from ksched.model.pod import Pod
from ksched.model.selectors import NodeAffinity as NodeAffinitySpec
from ksched.model.selectors import parse_node_affinity

NAME: Final = names.NODE_AFFINITY
ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED: Final = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"
PRE_FILTER_STATE_KEY: Final = f"PreFilter{NAME}"
PRE_SCORE_STATE_KEY: Final = f"PreScore{NAME}"
MATCHER_STATE_KEY: Final = f"{NAME}/matcher"


def _matcher(state: CycleState, cluster: ClusterReader) -> RowMatcher:
    """The cycle's memoizing matcher (one per cycle, shared by Filter and Score)."""
    m = state.read(MATCHER_STATE_KEY)
    if m is None or m.nodes is not cluster.nodes or m.n != cluster.nodes.n_rows:
        m = RowMatcher(cluster.nodes)
        state.write(MATCHER_STATE_KEY, m)
    return m  # type: ignore[no-any-return]


def _pod_required(pod: Pod) -> tuple[CompiledTerm, ...] | None:
    """The pod's required terms as upstream parses them; None when it has no required affinity."""
    aff = pod.node_affinity
    if aff is None or aff.required is None:
        return None
    return compile_required(aff.required)


def node_names_from_terms(affinity: NodeAffinitySpec | None) -> tuple[frozenset[str] | None, bool]:
    """Upstream PreFilter's node-name shortcut: ``(names, conflict)``.

    Only when every required term names nodes with ``metadata.name In``: the names of one term are
    intersected (its requirements are ANDed), the terms' sets are united (terms are ORed). An
    empty union is a conflict. ``names`` is None when the shortcut does not apply.
    """
    if affinity is None or affinity.required is None or not affinity.required:
        return None, False
    union: set[str] = set()
    for term in affinity.required:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == NAME_FIELD and req.operator == "In":
                values = set(req.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None, False
        union |= term_names
    if not union:
        return None, True
    return frozenset(union), False


class NodeAffinity:
    """``spec.nodeSelector`` + required node affinity (+ addedAffinity) filter; preferred-terms score."""

    name = NAME
    scores_in_range = True

    def __init__(self, added: NodeAffinitySpec | None = None) -> None:
        self._added_required: tuple[CompiledTerm, ...] | None = None
        self._added_preferred: CompiledPreferred | None = None
        if added is not None:
            if added.required is not None:
                self._added_required = compile_required(added.required)
                bad = [t.error for t in self._added_required if t.error is not None]
                if bad:
                    raise ConfigError(
                        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution", "; ".join(bad)
                    )
            if added.preferred:
                self._added_preferred = compile_preferred(added.preferred)
                if self._added_preferred.error is not None:
                    raise ConfigError(
                        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
                        self._added_preferred.error,
                    )
        self._after_node_change = AfterNodeChange(self._added_required)

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: only a new node or new labels can
        make a node match (no UpdateNodeTaint, which stands in for a missed Node/Add only without
        queueing hints)."""
        return {cluster_event("Node", "Add", "UpdateNodeLabel"): self._after_node_change}

    # ------------------------------------------------------------------ filtering
    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        aff = pod.node_affinity
        no_required = aff is None or aff.required is None
        # An empty nodeSelector map is what the API sends for a nil one (omitempty): treat alike.
        if no_required and self._added_required is None and not pod.node_selector:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _pod_required(pod))
        names_, conflict = node_names_from_terms(aff)
        if conflict:
            return None, unschedulable(ERR_REASON_CONFLICT, resolvable=False)
        if names_ is not None:
            return PreFilterResult(names_), SUCCESS
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        m = _matcher(state, cluster)
        enforced_fail: np.ndarray | None = None
        if self._added_required is not None:
            enforced_fail = ~m.required(self._added_required)
        # PreFilter stored the parsed terms (possibly None); compute them if it did not run.
        if PRE_FILTER_STATE_KEY in state.data:
            required = state.read(PRE_FILTER_STATE_KEY)
        else:
            required = _pod_required(pod)
        pod_ok = m.required(required)
        if pod.node_selector:
            pod_ok &= m.node_selector(pod.node_selector)
        pod_fail = ~pod_ok
        if enforced_fail is not None:
            pod_fail &= ~enforced_fail  # upstream returns at the first failing check
            if not enforced_fail.any() and not pod_fail.any():
                return FilterResult.all_pass()
            bits = enforced_fail.astype(np.uint64) | (pod_fail.astype(np.uint64) << np.uint64(1))
            return FilterResult(
                bits,
                (ERR_REASON_ENFORCED, ERR_REASON_POD),
                (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
            )
        if not pod_fail.any():
            return FilterResult.all_pass()
        return FilterResult.from_mask(pod_fail, ERR_REASON_POD, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """Which part rejected the node: the first unmatched nodeSelector label, or the affinity terms."""
        node = cluster.nodes.nodes[row]
        if node is None:
            return None
        m = RowMatcher(cluster.nodes)
        if self._added_required is not None and not m.required(self._added_required)[row]:
            return "no term of the scheduler's addedAffinity matches the node"
        for key, want in pod.node_selector.items():
            have = node.labels.get(key)
            if have != want:
                shown = "absent" if have is None else repr(have)
                return f"nodeSelector {key}={want!r} not matched (node label {key} is {shown})"
        if not m.required(_pod_required(pod))[row]:
            return "no requiredDuringSchedulingIgnoredDuringExecution term matches the node"
        return None

    # ------------------------------------------------------------------ scoring
    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Status:
        preferred = pod.node_affinity.preferred if pod.node_affinity is not None else ()
        if not preferred and self._added_preferred is None:
            return SKIP
        compiled = compile_preferred(preferred)
        if compiled.error is not None:
            return error(compiled.error)
        state.write(PRE_SCORE_STATE_KEY, compiled)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        compiled: CompiledPreferred | None = state.read(PRE_SCORE_STATE_KEY)
        if compiled is None:
            preferred = pod.node_affinity.preferred if pod.node_affinity is not None else ()
            compiled = compile_preferred(preferred)
            if compiled.error is not None:
                raise ValueError(compiled.error)
        terms = list(self._added_preferred.terms) if self._added_preferred is not None else []
        terms.extend(compiled.terms)
        if not terms:
            return 0
        return _matcher(state, cluster).preferred_scores(terms)

    def normalize_score(self, state: CycleState, pod: Pod, scores: Scores, feasible: np.ndarray) -> Scores:
        return default_normalize_score(scores, feasible, reverse=False)


def new(args: Any, handle: Handle) -> NodeAffinity:
    """Build from NodeAffinityArgs (``args=None``: upstream defaults, no addedAffinity)."""
    raw: Mapping[str, Any] | None = getattr(args, "added_affinity", None) if args is not None else None
    added = None
    if raw is not None:
        try:
            added = parse_node_affinity(raw, "NodeAffinityArgs", "addedAffinity")
        except ObjectError as exc:
            raise ConfigError(exc.field, exc.problem) from exc
    return NodeAffinity(added)


if TYPE_CHECKING:
    from ksched.framework.api import (
        FilterPlugin,
        NormalizeScorePlugin,
        PreFilterPlugin,
        PreScorePlugin,
        ScorePlugin,
    )

    _conforms: tuple[PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin] = (
        NodeAffinity(),
        NodeAffinity(),
        NodeAffinity(),
        NodeAffinity(),
        NodeAffinity(),
    )
