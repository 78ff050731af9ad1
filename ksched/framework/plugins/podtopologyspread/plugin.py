"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score, all nodes at once.

Upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/{plugin,common,filtering,scoring}.go``.

- PreFilter works out the pod's DoNotSchedule constraints (its own, or the default constraints
  when it has none) and, per constraint, the matching pods per topology domain over every node
  that has all the constraints' topology keys and passes the node inclusion policies, the number
  of such domains and the global minimum (0 when there are fewer domains than ``minDomains``).
  Skip when there is no constraint.
- Filter, per node and constraint in order: a missing topology label is UnschedulableAndUnresolvable;
  ``domain count + self match − minimum > maxSkew`` is Unschedulable.
- PreScore / Score / NormalizeScore: upstream's ``cnt × ln(domains + 2) + (maxSkew − 1)`` summed
  over ScheduleAnyway constraints and rounded, then normalized so fewer matching pods score higher.
  With system defaulting and no constraints of its own, a pod's nodes need not carry every key.

Parsed constraints are kept per pod record (records are immutable), so a pod retried many times is
parsed once. Preemption's what-if (upstream's AddPod/RemovePod extensions) is not here: the
preemption work recomputes through the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
)
from ksched.framework.interface import HintFn
from ksched.framework.plugins.podtopologyspread import counting
from ksched.framework.plugins.podtopologyspread.constraints import (
    DO_NOT_SCHEDULE,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    PodConstraints,
    parse_default_constraints,
    parse_pod_constraints,
    with_selector,
)
from ksched.framework.plugins.podtopologyspread.hints import ConstraintMemo, SpreadHints
from ksched.model.pod import Pod

NAME: Final = names.POD_TOPOLOGY_SPREAD
ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
PRE_FILTER_STATE_KEY: Final = f"PreFilter{NAME}"
PRE_SCORE_STATE_KEY: Final = f"PreScore{NAME}"
SCORE_STATE_KEY: Final = f"{NAME}/ignored"
SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"
PARSED_CACHE_SIZE: Final = 2048

_REASONS: Final = (ERR_REASON_NODE_LABEL_NOT_MATCH, ERR_REASON_CONSTRAINTS_NOT_MATCH)
_CODES: Final = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE)


class PodTopologySpread:
    """PreFilter, Filter, PreScore, Score and NormalizeScore of upstream's PodTopologySpread."""

    name = NAME
    scores_in_range = True

    def __init__(
        self,
        default_constraints: tuple[Constraint, ...] = (),
        *,
        system_defaulted: bool = False,
        handle: Handle | None = None,
    ) -> None:
        self.system_defaulted = system_defaulted
        self._handle = handle
        """Its snapshot gives the queueing hints the cluster's Services and workloads."""
        self._default_hard = tuple(c for c in default_constraints if c.when_unsatisfiable == DO_NOT_SCHEDULE)
        self._default_soft = tuple(c for c in default_constraints if c.when_unsatisfiable != DO_NOT_SCHEDULE)
        if not default_constraints:
            # Without defaults, a pod with no constraints of its own is skipped at no cost.
            self.skips_pods_without = "topology_spread_constraints"
        self._parsed: dict[int, tuple[Pod, PodConstraints | ObjectError]] = {}
        self._namespaces: dict[str, frozenset[str]] = {}
        self._hint_memo = ConstraintMemo()
        self._hints = SpreadHints(self._hint_constraints)

    # ------------------------------------------------------------------ requeueing
    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with QueueingHints on: assigned pods added, relabelled or
        deleted, the pod's own new tolerations (``nodeTaintsPolicy: Honor``), nodes added, deleted,
        relabelled or re-tainted. See :mod:`.hints`."""
        return {
            cluster_event(
                "Pod", "Add", "UpdatePodLabel", "UpdatePodToleration", "Delete"
            ): self._hints.after_pod_change,
            cluster_event(
                "Node", "Add", "Delete", "UpdateNodeLabel", "UpdateNodeTaint"
            ): self._hints.after_node_change,
        }

    def _hint_constraints(self, pod: Pod) -> tuple[Constraint, ...] | None:
        """The DoNotSchedule constraints the hints read (upstream ``getConstraints``), memoized per
        pod record; None when they do not parse, or when the defaults need a selector and there is
        no snapshot of the cluster to build it from."""
        if pod.topology_spread_constraints:
            return self._hint_memo.get(pod, -1, _own_hard)
        if not self._default_hard:
            return ()
        snapshot = self._handle.snapshot if self._handle is not None else None
        if snapshot is None:
            return None
        stamp = snapshot.selector_owners.generation
        return self._hint_memo.get(pod, stamp, lambda p: self._defaults(p, snapshot, True))

    # ------------------------------------------------------------------ constraints
    def _own(self, pod: Pod) -> PodConstraints:
        """The pod's own constraints, parsed once per record; raises :class:`ObjectError`."""
        hit = self._parsed.get(id(pod))
        if hit is None or hit[0] is not pod:
            try:
                parsed: PodConstraints | ObjectError = parse_pod_constraints(pod)
            except ObjectError as exc:
                parsed = exc
            if len(self._parsed) >= PARSED_CACHE_SIZE:
                self._parsed.clear()
            hit = self._parsed[id(pod)] = (pod, parsed)
        if isinstance(hit[1], ObjectError):
            raise hit[1]
        return hit[1]

    def _defaults(self, pod: Pod, cluster: ClusterReader, hard: bool) -> tuple[Constraint, ...]:
        """Upstream ``buildDefaultConstraints``: the defaults with the pod's default selector, if any."""
        defaults = self._default_hard if hard else self._default_soft
        if not defaults:
            return ()
        selector = cluster.selector_owners.default_selector(pod.namespace, pod.labels, pod.controller)
        if selector is None:
            return ()
        return with_selector(defaults, selector, pod.labels)

    def constraints(self, pod: Pod, cluster: ClusterReader, *, hard: bool) -> tuple[Constraint, ...]:
        """The DoNotSchedule (``hard``) or ScheduleAnyway constraints that apply to ``pod``."""
        if pod.topology_spread_constraints:
            own = self._own(pod)
            return own.hard if hard else own.soft
        return self._defaults(pod, cluster, hard)

    def _namespace(self, pod: Pod) -> frozenset[str]:
        ns = self._namespaces.get(pod.namespace)
        if ns is None:
            if len(self._namespaces) >= PARSED_CACHE_SIZE:
                self._namespaces.clear()
            ns = self._namespaces[pod.namespace] = frozenset((pod.namespace,))
        return ns

    # ------------------------------------------------------------------ filtering
    def pre_filter(
        self, state: CycleState, pod: Pod, cluster: ClusterReader
    ) -> tuple[PreFilterResult | None, Status]:
        try:
            constraints = self.constraints(pod, cluster, hard=True)
        except ObjectError as exc:
            return None, error(f"get constraints from pod: {exc}")
        if not constraints:
            return None, SKIP
        state.write(
            PRE_FILTER_STATE_KEY, counting.hard_state(cluster, pod, constraints, self._namespace(pod))
        )
        return None, SUCCESS

    def _hard_states(
        self, state: CycleState | None, pod: Pod, cluster: ClusterReader
    ) -> list[counting.HardConstraintState]:
        states = state.read(PRE_FILTER_STATE_KEY) if state is not None else None
        if states is None:
            constraints = self.constraints(pod, cluster, hard=True)
            states = (
                counting.hard_state(cluster, pod, constraints, self._namespace(pod)) if constraints else []
            )
        return states  # type: ignore[no-any-return]

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterReader) -> FilterResult:
        states = self._hard_states(state, pod, cluster)
        if not states:
            return FilterResult.all_pass()
        bits = counting.filter_bits(states, cluster.nodes.n_rows)
        if not bits.any():
            return FilterResult.all_pass()
        return FilterResult(bits, _REASONS, _CODES)

    def relevance(self, pod: Pod, cluster: ClusterReader) -> Callable[[Pod], bool] | None:
        """Which pods could move this Filter's verdict for ``pod`` when counted on (or taken off) a
        node: only pods in ``pod``'s namespace that a DoNotSchedule constraint's selector matches
        are counted (the domains and eligible nodes come from nodes alone), so the nominated pods
        and preemption victims outside this set can be counted in the row accounting alone. Says
        True when unsure (constraints that do not parse), and ignores that terminating pods are
        not counted (more pods relevant, never fewer). None: no pod is relevant.
        """
        try:
            constraints = self.constraints(pod, cluster, hard=True)
        except ObjectError:
            return _always
        selectors = [c.selector for c in constraints if c.selector is not None and not c.selector.empty]
        if not selectors:
            return None  # no DoNotSchedule constraint counts any pod (or PreFilter skips)
        namespace = pod.namespace

        def relevant(other: Pod) -> bool:
            if other.namespace != namespace:
                return False
            labels = other.labels
            return any(sel.matches(labels) for sel in selectors)

        return relevant

    def affected_by(self, pod: Pod, other: Pod, cluster: ClusterReader) -> bool:
        """One-off :meth:`relevance` (tests, callers with a single pod)."""
        check = self.relevance(pod, cluster)
        return check is not None and check(other)

    def explain_row(self, pod: Pod, cluster: ClusterReader, row: int) -> str | None:
        """Which constraint rejected the node, with the counts behind the skew."""
        try:
            states = self._hard_states(None, pod, cluster)
        except ObjectError:
            return None
        values = cluster.nodes.label_values.values
        for i, s in enumerate(states):
            c = s.constraint
            vid = int(s.col[row])
            if vid < 0:
                return f"constraint {i} (topologyKey {c.topology_key}): the node has no such label"
            count = int(s.sums[vid])
            own = 1 if c.self_match else 0
            skew = count + own - s.min_match
            if skew > c.max_skew:
                return (
                    f"constraint {i} (topologyKey {c.topology_key}): domain {values[vid]!r} has {count} "
                    f"matching pod(s), +{own} for this pod, global minimum {s.min_match} over "
                    f"{s.domains} domain(s): skew {skew} > maxSkew {c.max_skew}"
                )
        return None

    # ------------------------------------------------------------------ scoring
    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Status:
        try:
            constraints = self.constraints(pod, cluster, hard=False)
        except ObjectError as exc:
            return error(f"calculating preScoreState: {exc}")
        if not constraints:
            return SKIP
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        state.write(PRE_SCORE_STATE_KEY, (constraints, require_all))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, cluster: ClusterReader, feasible: np.ndarray) -> Scores:
        prepared = state.read(PRE_SCORE_STATE_KEY)
        if prepared is None:
            constraints = self.constraints(pod, cluster, hard=False)
            prepared = (constraints, bool(pod.topology_spread_constraints) or not self.system_defaulted)
        constraints, require_all = prepared
        if not constraints:
            return 0
        raw, ignored = counting.soft_scores(
            cluster, pod, constraints, self._namespace(pod), feasible, require_all
        )
        state.write(SCORE_STATE_KEY, ignored)
        return raw

    def normalize_score(self, state: CycleState, pod: Pod, scores: Scores, feasible: np.ndarray) -> Scores:
        if not isinstance(scores, np.ndarray):
            return scores
        ignored = state.read(SCORE_STATE_KEY)
        if ignored is None:
            ignored = np.zeros(feasible.shape[0], dtype=np.bool_)
        return counting.normalize(scores[: feasible.shape[0]], feasible, ignored)


def _always(other: Pod) -> bool:
    return True


def _own_hard(pod: Pod) -> tuple[Constraint, ...] | None:
    """The pod's own DoNotSchedule constraints; None when one does not parse."""
    try:
        return parse_pod_constraints(pod).hard
    except ObjectError:
        return None


def new(args: Any, handle: Handle) -> PodTopologySpread:
    """Build from PodTopologySpreadArgs (``None``: upstream defaults, system defaulting)."""
    defaulting = (
        getattr(args, "defaulting_type", SYSTEM_DEFAULTING) if args is not None else SYSTEM_DEFAULTING
    )
    raw: tuple[Mapping[str, Any], ...] = tuple(getattr(args, "default_constraints", ()) or ())
    if defaulting == SYSTEM_DEFAULTING:
        if raw:
            raise ConfigError(
                "defaultingType", 'Invalid value: "System": when .defaultConstraints are not empty'
            )
        raw = SYSTEM_DEFAULT_CONSTRAINTS
    elif defaulting != LIST_DEFAULTING:
        raise ConfigError(
            "defaultingType", f'Unsupported value: "{defaulting}": supported values: "System", "List"'
        )
    try:
        parsed = parse_default_constraints(raw)
    except ObjectError as exc:
        raise ConfigError(exc.field, exc.problem) from exc
    return PodTopologySpread(parsed, system_defaulted=defaulting == SYSTEM_DEFAULTING, handle=handle)


if TYPE_CHECKING:
    from ksched.framework.api import (
        FilterPlugin,
        NormalizeScorePlugin,
        PreFilterPlugin,
        PreScorePlugin,
        ScorePlugin,
    )

    _conforms: tuple[PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin] = (
        PodTopologySpread(),
        PodTopologySpread(),
        PodTopologySpread(),
        PodTopologySpread(),
        PodTopologySpread(),
    )
