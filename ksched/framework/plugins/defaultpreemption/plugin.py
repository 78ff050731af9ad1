"""DefaultPreemption: when no node fits, find a node where evicting lower-priority pods makes room.

Upstream: ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`` and
``pkg/scheduler/framework/preemption/preemption.go`` (reference §8). The steps:

1. **Eligibility.** ``preemptionPolicy: Never`` never preempts. A pod already nominated to a node
   where a lower-priority pod is terminating because of preemption waits for it, unless the filters
   now reject that node as unresolvable.
2. **Potential nodes**: every node whose failure was plain ``Unschedulable``, found with a few
   array operations over the cycle's per-plugin failure bitsets. Nodes rejected for reasons that
   eviction cannot fix (taints, node affinity, too small even when empty, ...) are
   ``UnschedulableAndUnresolvable`` and skipped.
3. **Dry run** from a random offset over the potential nodes until at least one candidate that
   violates no PodDisruptionBudget is found and ``numCandidates`` candidates in all (args
   ``minCandidateNodesPercentage`` / ``minCandidateNodesAbsolute``). Nodes go through
   :mod:`.dryrun` in chunks of ``numCandidates`` nodes. With row-local filters (the usual case)
   the first cut is vectorized: every lower-priority pod of the chunk's nodes is taken out of the
   per-row accounting with one scatter-add, one filter pass over all rows keeps the nodes where
   the pod would then fit, and only those get the reprieve loop, whose step *j* is again one pass
   for all of them. Nodes with no lower-priority pod are settled without a pass. The dry run stops
   exactly where upstream's sequential run would; the chunk's extra nodes are discarded. That
   path keeps the whole chunk in arrays (:mod:`.batch`: one table of pods, one sort, PDB counts
   per budget and node by cumulative sums); the node-by-node path keeps per-node lists
   (:meth:`DefaultPreemption._works`), which is also the reference the arrays are tested against.
   The numbers the table needs per pod (priority, start time, place in its node's importance
   order, requests) are kept per node row across calls (:mod:`.memo`) while the row's pods stay
   the same, so a preemption re-reads only the nodes that changed since one last read them.
4. **Pick one** (:mod:`.pick`) and return it with its victims; the scheduler nominates the pod,
   marks and deletes the victims (``mark_preempting`` / ``done_preempting`` bracket that work, and
   :meth:`pre_enqueue` holds the pod back meanwhile, as upstream's async preemption does).

Messages are upstream's without the ``preemption: `` prefix, which the FitError text adds
(:func:`ksched.framework.messages.fit_error_message`). Not guaranteed: upstream breaks a final
tie among candidates by Go map order (random); here it is the first in candidate order.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ksched.cache.cluster import PodEntry
from ksched.config.types import DefaultPreemptionArgs
from ksched.errors import ExtenderError
from ksched.framework import names
from ksched.framework.api import ClusterEventSpec, ClusterReader, cluster_event
from ksched.framework.extender import Victims, call_extenders
from ksched.framework.handle import Handle
from ksched.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    HintFn,
    NominatedPods,
    PostFilterResult,
    Status,
)
from ksched.framework.plugins.defaultpreemption import batch, hints
from ksched.framework.plugins.defaultpreemption.dryrun import (
    NO_VICTIMS,
    ArrayProbe,
    CacheProbe,
    NodeWork,
    Probe,
    Residents,
    select_victims,
)
from ksched.framework.plugins.defaultpreemption.memo import ListingMemo
from ksched.framework.plugins.defaultpreemption.pdb import Budget, BudgetIndex, BudgetParser
from ksched.framework.plugins.defaultpreemption.pick import Candidate, importance_key, pick_one
from ksched.framework.result import CycleResult
from ksched.model.pod import Pod

log = logging.getLogger(__name__)

NAME = names.DEFAULT_PREEMPTION
ERR_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
ERR_NOT_HELPFUL = "Preemption is not helpful for scheduling"
ERR_NO_CANDIDATE = "no candidate node for preemption"
ERR_WAITING = "waiting for the preemption for this pod to be finished"
PREEMPT_NEVER = "Never"
_MIN_CHUNK = 32


def num_candidates(num_nodes: int, args: DefaultPreemptionArgs) -> int:
    """Upstream ``calculateNumCandidates``: how many candidates the dry run must find."""
    n = num_nodes * args.min_candidate_nodes_percentage // 100
    n = max(n, args.min_candidate_nodes_absolute)
    return min(n, num_nodes)


def potential_rows(result: CycleResult) -> np.ndarray:
    """Rows where eviction might help: the first failing plugin's code there is Unschedulable.

    A PreFilter rejection gives every node its status: all nodes when it is Unschedulable, none
    when unresolvable. Returned in row order.
    """
    valid = result.valid
    if valid is None:
        return np.zeros(0, dtype=np.intp)
    n = valid.shape[0]
    pre = result.prefilter_rejection
    if pre is not None:
        return np.flatnonzero(valid) if pre.code == Code.UNSCHEDULABLE else np.zeros(0, dtype=np.intp)
    remaining = valid.copy()
    if result.feasible is not None:
        remaining &= ~result.feasible[:n]
    resolvable = np.zeros(n, dtype=np.bool_)
    for _plugin, fr in result.filters:
        if fr.failed is None:
            continue
        failed = fr.failed[:n]
        here = remaining & (failed != 0)
        unresolvable_bits = 0
        for bit, code in enumerate(fr.codes):
            if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                unresolvable_bits |= 1 << bit
        if unresolvable_bits:
            hard = (failed & np.uint64(unresolvable_bits)) != 0
            resolvable |= here & ~hard
        else:
            resolvable |= here
        remaining &= ~here
    return np.flatnonzero(resolvable)


def node_status_code(result: CycleResult, row: int) -> Code:
    """The cycle's status code for one row (SUCCESS when it recorded no failure there)."""
    failure = result.first_failure(row)
    return Code.SUCCESS if failure is None else failure[2]


def fit_error_text(num_all_nodes: int, statuses: Sequence[Status], absent: Status) -> str:
    """Upstream ``FitError.Error`` for the dry run's node statuses: ``0/N nodes are available: ...``
    where nodes without a status of their own count with ``absent``'s reasons."""
    counts: dict[str, int] = {}
    for st in statuses:
        for reason in st.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    missing = num_all_nodes - len(statuses)
    if missing > 0:
        for reason in absent.reasons:
            counts[reason] = counts.get(reason, 0) + missing
    entries = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(entries)}."


class DefaultPreemption:
    """The PostFilter (and PreEnqueue) plugin."""

    name = NAME

    def __init__(self, args: DefaultPreemptionArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else DefaultPreemptionArgs()
        self.handle = handle if handle is not None else Handle(NAME)
        """Dry runs re-run the profile's filters through it; draws use its generator."""
        self.rng: np.random.Generator = self.handle.rng
        self.offset_for: Callable[[int], int] | None = None
        """Test hook (upstream tests replace ``getOffsetRand``): the dry run's start offset for a
        number of potential nodes; default a uniform draw from the profile's generator."""
        self._preempting: set[str] = set()
        self._budgets = BudgetParser()
        self._listings = ListingMemo()
        """The potential victims' numbers per node row, kept across calls (:mod:`.memo`)."""

    # ------------------------------------------------------------------ PreEnqueue
    def mark_preempting(self, uid: str) -> None:
        """The scheduler started evicting victims for pod ``uid``: hold the pod back until done."""
        self._preempting.add(uid)

    def done_preempting(self, uid: str) -> None:
        self._preempting.discard(uid)

    def is_preempting(self, uid: str) -> bool:
        return uid in self._preempting

    def pre_enqueue(self, pod: Pod) -> Status:
        if pod.uid in self._preempting:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_WAITING,))
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventSpec]:
        return list(self.queueing_hints())

    def queueing_hints(self) -> dict[ClusterEventSpec, HintFn | None]:
        """Upstream ``EventsToRegister`` with async preemption on (the v1.35 default): Pod/Delete,
        so that the queue looks at a pod this plugin holds back when victims go; the hint itself
        always skips (:mod:`.hints`)."""
        return {cluster_event("Pod", "Delete"): hints.after_pod_deleted}

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self,
        state: CycleState,
        pod: Pod,
        cluster: ClusterReader,
        result: CycleResult,
        nominated: NominatedPods | None,
    ) -> PostFilterResult:
        reason = self.ineligible_reason(pod, cluster, result)
        if reason:
            return PostFilterResult(status=Status(Code.UNSCHEDULABLE, (reason,)), keep_nomination=True)
        candidates, statuses, errors = self.find_candidates(pod, cluster, result, nominated)
        if not candidates:
            if errors:
                return PostFilterResult(status=Status(Code.ERROR, (errors[0],)), keep_nomination=True)
            absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NOT_HELPFUL,))
            text = fit_error_text(result.num_all_nodes, statuses, absent)
            return PostFilterResult(status=Status(Code.UNSCHEDULABLE, (text,)))
        if self.handle.extenders:
            candidates, error = self.call_extenders(pod, cluster, candidates)
            if error is not None:
                return PostFilterResult(status=Status(Code.ERROR, (str(error),)), keep_nomination=True)
        best = pick_one(candidates)
        if best is None:
            return PostFilterResult(
                status=Status(Code.UNSCHEDULABLE, (ERR_NO_CANDIDATE,)), keep_nomination=True
            )
        return PostFilterResult(nominated_node=best.node, victims=best.victims, status=SUCCESS)

    def call_extenders(
        self, pod: Pod, cluster: ClusterReader, candidates: list[Candidate]
    ) -> tuple[list[Candidate], ExtenderError | None]:
        """Upstream ``callExtenders``: the extenders that support preemption trim the candidates
        (:func:`ksched.framework.extender.call_extenders`); kept in candidate order, nodes an
        extender added after them."""
        before = {c.node: Victims(c.victims, c.num_pdb_violations) for c in candidates}
        after, error = call_extenders(self.handle.extenders, pod, cluster, before)
        if error is not None:
            return [], error
        order = [c.node for c in candidates if c.node in after] + [n for n in after if n not in before]
        return [Candidate(n, after[n].pods, after[n].num_pdb_violations) for n in order], None

    def find_candidates(
        self, pod: Pod, cluster: ClusterReader, result: CycleResult, nominated: NominatedPods | None = None
    ) -> tuple[list[Candidate], list[Status], list[str]]:
        """Upstream ``findCandidates`` + ``DryRunPreemption``: candidates (non-violating first),
        the dry-run statuses of the potential nodes that are not candidates, and dry-run errors."""
        potential = potential_rows(result)
        if potential.size == 0:
            return [], [], []
        budgets = self._budgets.budgets(cluster.pdbs.values())
        count = int(potential.size)
        want = num_candidates(count, self.args)
        offset = self.offset_for(count) if self.offset_for is not None else int(self.rng.integers(count))
        order = np.roll(potential, -offset)
        return self._dry_run(pod, cluster, nominated, order, want, budgets)

    def ineligible_reason(self, pod: Pod, cluster: ClusterReader, result: CycleResult) -> str:
        """Upstream ``PodEligibleToPreemptOthers``: "" when the pod may preempt, else why not."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return ERR_POLICY_NEVER
        nom = pod.nominated_node_name
        if not nom:
            return ""
        row = cluster.nodes.row_of.get(nom)
        if row is None:
            return ""
        if node_status_code(result, row) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""  # the nominated node cannot take it any more: look again
        for p in cluster.pods_on(nom):
            if p.priority < pod.priority and p.deleting and p.preempted_by_scheduler:
                return ERR_TERMINATING_ON_NOMINATED
        return ""

    # ------------------------------------------------------------------ dry run
    def _works(
        self, pod: Pod, cluster: ClusterReader, rows: np.ndarray, budgets: BudgetIndex | None
    ) -> tuple[list[NodeWork], Residents]:
        """One :class:`NodeWork` per row, and the table of every potential victim among them."""
        nodes = cluster.nodes
        prio = pod.priority
        table: list[PodEntry] = []
        works: list[NodeWork] = []
        for r in rows.tolist():
            name = nodes.node(r).name
            lower = [e for e in cluster.entries_on(name) if e.pod.priority < prio]
            if not lower:
                works.append(NodeWork(r, name, [], status=NO_VICTIMS))
                continue
            lower.sort(key=_entry_importance)
            base = len(table)
            table.extend(lower)
            potential = list(range(base, base + len(lower)))
            work = NodeWork(r, name, potential)
            if budgets is not None:
                flags = budgets.split([e.pod for e in lower], [e.label_set for e in lower])
                work.violating = frozenset(k for k, f in zip(potential, flags, strict=True) if f)
                work.order = [k for k, f in zip(potential, flags, strict=True) if f] + [
                    k for k, f in zip(potential, flags, strict=True) if not f
                ]
            else:
                work.order = potential
            works.append(work)
        return works, Residents(table)

    def _dry_run(
        self,
        pod: Pod,
        cluster: ClusterReader,
        nominated: NominatedPods | None,
        order: np.ndarray,
        want: int,
        budgets: Sequence[Budget],
    ) -> tuple[list[Candidate], list[Status], list[str]]:
        """Candidates (non-violating first), the statuses of nodes tried without success, errors."""
        _res, local = self.handle.dry_run_filters(pod, cluster, nominated)
        chunk = max(want, _MIN_CHUNK) if local else 1
        good: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: list[Status] = []
        errors: list[str] = []
        i = 0
        total = order.size
        while i < total:
            rows = order[i : i + chunk]
            i += rows.size
            # A fresh index per chunk: its memo keys on label-set ids, stable only while the cache
            # is not changed, and the node-by-node probe changes it between chunks.
            index = BudgetIndex(budgets) if budgets else None
            if local:
                out = self._chunk_batched(pod, cluster, nominated, rows, index)
            else:
                out = self._chunk_by_node(pod, cluster, nominated, rows, index, local=False)
            if _take(out, want, good, violating, statuses, errors):
                return good + violating, statuses, errors
            if local:
                chunk = _next_chunk(want, len(good), len(violating), i)
        return good + violating, statuses, errors

    def _chunk_batched(
        self,
        pod: Pod,
        cluster: ClusterReader,
        nominated: NominatedPods | None,
        rows: np.ndarray,
        index: BudgetIndex | None,
    ) -> ChunkOutcome:
        """The dry run of a chunk with row-local filters: as arrays over the whole chunk (:mod:`.batch`)."""
        chunk = batch.gather(pod, cluster, rows, index, self._listings)
        res = chunk.residents()
        if chunk.entries:
            probe = ArrayProbe(self.handle, pod, cluster, nominated, res)
            sel = batch.select(probe, chunk, res)
        else:
            none = np.zeros(0, dtype=np.intp)
            sel = batch.Selection([NO_VICTIMS] * len(chunk.names), np.zeros(0, dtype=np.bool_), none)
        self._listings.settle(cluster, rows, sel.single)
        got = batch.outcomes(chunk, sel)
        return ChunkOutcome(chunk.names, got.status, got.victims, got.violations)

    def _chunk_by_node(
        self,
        pod: Pod,
        cluster: ClusterReader,
        nominated: NominatedPods | None,
        rows: np.ndarray,
        index: BudgetIndex | None,
        *,
        local: bool,
    ) -> ChunkOutcome:
        """The dry run with per-node lists (:meth:`_works`): node by node through the cache
        (upstream's loop) for filters that are not row-local. With ``local`` (the batch verdict of
        ``Handle.dry_run_filters``) it runs :func:`.dryrun.select_victims` with an array probe:
        the reference :meth:`_chunk_batched` is tested against."""
        works, table = self._works(pod, cluster, rows, index)
        todo = [w for w in works if w.status is None]
        if todo:
            probe: Probe
            if local:
                probe = ArrayProbe(self.handle, pod, cluster, nominated, table)
            else:
                probe = CacheProbe(self.handle, pod, cluster, nominated, table)
            select_victims(probe, todo, len(table))
        entries = table.entries
        out = ChunkOutcome([w.node for w in works], [w.status for w in works], [], [])
        for w in works:
            victims = [entries[k].pod for k in w.victims]
            if w.violating and len(w.violating) < len(w.potential):
                victims.sort(key=importance_key)  # upstream re-sorts when both groups had pods
            out.victims.append(tuple(victims))
            out.violations.append(w.num_pdb_violations)
        return out


@dataclass(slots=True)
class ChunkOutcome:
    """Per node of a chunk, in chunk order: its status when it is not a candidate, else its
    victims (most important first) and how many of them violate a PodDisruptionBudget."""

    names: list[str]
    status: list[Status | None]
    victims: list[tuple[Pod, ...]]
    violations: list[int]


def _next_chunk(want: int, good: int, violating: int, tried: int) -> int:
    """How many nodes the next batched chunk should try, after ``tried`` nodes gave ``good`` and
    ``violating`` candidates: the shortfall at the rate seen so far, with a quarter more (at least
    :data:`_MIN_CHUNK`). A first chunk of ``want`` nodes usually misses only the few whose
    nominated pods leave no room; trying another ``want`` nodes for those was most of a
    PostFilter. Chunk sizes never change the answer: :func:`_take` walks the nodes in order and
    stops where upstream's dry run stops, whatever comes after in the chunk."""
    found = good + violating
    short = max(want - found, 1 if good == 0 else 0)
    per_node = found / tried if tried and found else 1.0
    return max(_MIN_CHUNK, int(short / per_node * 1.25) + 1)


def _take(
    out: ChunkOutcome,
    want: int,
    good: list[Candidate],
    violating: list[Candidate],
    statuses: list[Status],
    errors: list[str],
) -> bool:
    """Upstream's ``DryRunPreemption`` collection over one chunk's outcomes, node by node in chunk
    order: a node that is not a candidate adds its status (and its message when an error); a
    candidate joins the non-violating or the violating list unless that one has ``want``
    already; once there is a non-violating candidate and ``want`` in all, the dry run stops
    (True) and the chunk's later nodes count for nothing.

    The same as that loop, with the stopping node found by cumulative counts over all the
    chunk's candidates, so that only the candidates kept become :class:`Candidate` objects.
    """
    status = out.status
    n = len(status)
    cand = np.array([s is None for s in status], dtype=np.bool_)
    pos = np.flatnonzero(cand)
    clean = np.array(out.violations, dtype=np.int64)[pos] == 0
    # Sizes the two lists would have after each candidate, had neither a cap.
    n_good = len(good) + np.cumsum(clean)
    n_bad = len(violating) + np.cumsum(~clean)
    have_good = np.minimum(n_good, want)  # what the lists hold (none when want is 0)
    done = (have_good >= 1) & (have_good + np.minimum(n_bad, want) >= want)
    hit = np.flatnonzero(done)
    upto = int(hit[0]) + 1 if hit.size else pos.size  # candidates looked at
    end = int(pos[upto - 1]) + 1 if hit.size else n  # nodes looked at
    kept = np.where(clean, n_good, n_bad)[:upto] <= want
    names, victims, violations = out.names, out.victims, out.violations
    seen, clean = pos[:upto], clean[:upto]
    for target, which in ((good, seen[kept & clean]), (violating, seen[kept & ~clean])):
        target.extend([Candidate(names[j], victims[j], violations[j]) for j in which.tolist()])
    for j in np.flatnonzero(~cand[:end]).tolist():
        st = status[j]
        assert st is not None
        statuses.append(st)
        if st.code == Code.ERROR:
            errors.append(st.message)
    return bool(hit.size)


def _entry_importance(e: PodEntry) -> tuple[int, float, str]:
    """Most important first (:func:`.pick.importance_key`); the uid makes exact ties reproducible."""
    p = e.pod
    return (-p.priority, p.start_time if p.start_time is not None else math.inf, p.uid)
