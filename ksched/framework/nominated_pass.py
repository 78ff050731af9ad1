"""Upstream's two-pass rule for nominated pods, and what it remembers from one cycle to the next.

Upstream (``RunFilterPluginsWithNominatedPods``) asks a node's filters twice when pods of at least
the incoming pod's priority are nominated to it (preemption reserved room there for them): with
those pods counted as if they ran there, and without them. The node passes only if it passes both,
so that the room is not taken by a lower-priority pod meanwhile. The cycle itself is the pass
without them; :class:`NominatedPass` adds the other one, on the rows that still pass.

While preemptors wait for their victims to go, every cycle of every lower-priority pod sees the same
few nominations on the same few rows, and those rows rarely change: the other pods land
elsewhere. So the pass remembers, across cycles:

- the nominated pods per row for a priority (until the nominations or the nodes change), summed
  into one :class:`~ksched.framework.row_delta.RowDelta`;
- each row-subset filter's verdict on those rows (until the pod's filter inputs, as each plugin
  states them with ``filter_rows_key``, or the rows' accounting change: the node table's
  ``row_version``).

It also leaves the reasons of the pass with nominated pods out of ``result.filters`` when the cycle
found a node anyway and nobody asked to explain it: nothing reads them then, and merging them costs
a copy of every affected plugin's bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ksched.cache.cluster import ClusterCache
from ksched.framework import names
from ksched.framework.best_rows import BestRows, without_rows
from ksched.framework.interface import Code, CycleState, FilterResult, NominatedPods
from ksched.framework.relevance import always, never, relevance
from ksched.framework.result import CycleResult
from ksched.framework.row_delta import RowDelta
from ksched.model.pod import Pod

if TYPE_CHECKING:
    from ksched.framework.handle import Handle

POD_INDEPENDENT_FILTERS = frozenset(
    {
        names.NODE_UNSCHEDULABLE,
        names.NODE_NAME,
        names.TAINT_TOLERATION,
        names.NODE_AFFINITY,
        names.VOLUME_ZONE,
        names.VOLUME_BINDING,
    }
)
"""In-tree filters whose verdict on a node never depends on the pods there. The nominated-pods
pass only re-asks rows that already passed every filter without the nominated pods, so these
would pass them again: that pass leaves them out."""


@dataclass(slots=True)
class Narrowed:
    """What the pass with nominated pods did to one cycle."""

    feasible: np.ndarray
    """The cycle's feasible rows now: a narrowed copy, or the cycle's own array if none dropped."""
    changed: bool
    """Whether rows dropped out."""
    hint: BestRows | None
    """The best-row hint given to :meth:`NominatedPass.narrow`, for the rows of :attr:`feasible`;
    None when none was given or it no longer says where the best rows are."""
    merge: Callable[[], None] | None = None
    """Puts the pass's reasons into ``result.filters``; the caller runs it when they will be read
    (the cycle failed, explains, or is a dry run). None when they are there already."""

    def finish(self) -> None:
        if self.merge is not None:
            self.merge()
            self.merge = None


@dataclass(slots=True)
class _Nominations:
    """Nominated pods per row for one priority, remembered while ``groups`` (the nominator's
    answer, compared by identity) and the node table's ``generation`` stay the same."""

    groups: object
    generation: int
    uids: frozenset[str]
    by_row: dict[int, list[Pod]]
    _delta: RowDelta | None = None

    @property
    def delta(self) -> RowDelta:
        if self._delta is None:
            rows = list(self.by_row)
            by_row = self.by_row
            self._delta = RowDelta([p for r in rows for p in by_row[r]], [r for r in rows for _ in by_row[r]])
        return self._delta


@dataclass(slots=True)
class _Verdicts:
    """The row-subset filters' answers on ``delta``'s rows, and what they were given."""

    delta: RowDelta
    plugins: list[Any]
    keys: tuple[object, ...]
    width: int
    versions: bytes
    found: list[tuple[str, FilterResult]]
    failing: np.ndarray


class NominatedPass:
    """Pass 1 of the two-pass rule for one profile's cycles (see the module docstring)."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        self._nominations: _Nominations | None = None
        self._last_verdicts: _Verdicts | None = None

    # ------------------------------------------------------------------ which pods count
    def _pods_by_row(self, pod: Pod, cluster: ClusterCache, nominated: NominatedPods) -> _Nominations | None:
        """Rows with nominated pods that count for ``pod``: priority >= its own, not the pod itself,
        and not already in the cache (an assumed or bound pod is counted there already). None when
        there are none."""
        row_of = cluster.nodes.row_of
        known = cluster.pods  # the uid -> entry map behind ``uid in cluster``
        me = pod.uid
        groups_of = getattr(nominated, "groups_at_least", None)
        if groups_of is None:
            plain = _by_node_names(pod, cluster, nominated)
            return _Nominations(None, -1, frozenset(), plain) if plain else None
        groups = groups_of(pod.priority)
        if not groups:
            return None
        memo = self._nominations
        if (
            memo is not None
            and memo.groups is groups
            and memo.generation == cluster.nodes.generation
            and me not in memo.uids
            and known.keys().isdisjoint(memo.uids)
        ):
            return memo if memo.by_row else None
        by_row: dict[int, list[Pod]] = {}
        uids: list[str] = []
        excluded = False
        for name, group in groups:
            uids.extend(p.uid for p in group)
            row = row_of.get(name)
            if row is None:
                continue
            pods = [p for p in group if p.uid != me and p.uid not in known]
            excluded = excluded or len(pods) != len(group)
            if pods:
                by_row[row] = pods
        found = _Nominations(groups, cluster.nodes.generation, frozenset(uids), by_row)
        if not excluded:
            self._nominations = found
        return found if by_row else None

    # ------------------------------------------------------------------ the pass
    def narrow(
        self,
        pod: Pod,
        cluster: ClusterCache,
        nominated: NominatedPods,
        feasible: np.ndarray,
        result: CycleResult,
        state: CycleState,
        hint: BestRows | None,
    ) -> Narrowed | None:
        """Pass 1 on the rows that passed without nominated pods (``feasible``, pass 2).

        ``hint``: the fused sweep's best-row hint when it describes ``feasible`` (its ``rows``);
        the answer carries it over to the narrowed rows when it still holds (:func:`_drop`).

        When every filter that runs is pod-independent or answers for a few rows, the rows with
        nominated pods are asked directly (:meth:`_rows_only`; exact upstream reasons too).
        Otherwise the nominated pods are counted on their rows and the filters re-run
        (:meth:`_whole_profile`). None when the pass changes nothing.
        """
        if isinstance(nominated, Sized) and not len(nominated):
            return None
        noms = self._pods_by_row(pod, cluster, nominated)
        if noms is None:
            return None
        skipped = state.skip_filter
        row_filters = _row_subset_filters(self._handle, skipped)
        if row_filters is not None:
            return self._rows_only(row_filters, pod, cluster, state, noms, feasible, result, hint)
        out = self._whole_profile(pod, cluster, skipped, noms.by_row, feasible, result)
        if out is None:
            return None
        return _drop(feasible, np.flatnonzero(feasible & ~out), hint, None)

    def _verdicts(
        self, plugins: list[Any], pod: Pod, cluster: ClusterCache, state: CycleState, delta: RowDelta
    ) -> _Verdicts:
        """``plugins``' ``filter_rows`` answers on ``delta``'s rows: the last ones again when
        nothing they read has changed since (the same delta and plugins, each plugin's
        ``filter_rows_key`` the very same object, the same table width and row versions)."""
        nodes = cluster.nodes
        keys = tuple(_filter_rows_key(p, state, pod, cluster) for p in plugins)
        width = nodes.requested.shape[1]
        versions = nodes.row_version[delta.rows].tobytes()
        memo = self._last_verdicts
        if (
            memo is not None
            and memo.delta is delta
            and memo.width == width
            and memo.versions == versions
            and len(memo.plugins) == len(plugins)
            and all(a is b for a, b in zip(plugins, memo.plugins, strict=True))
            and all(a is b and a is not None for a, b in zip(keys, memo.keys, strict=True))
        ):
            return memo
        found: list[tuple[str, FilterResult]] = []
        for plugin in plugins:
            fr = plugin.filter_rows(state, pod, cluster, delta)
            if fr.failed is not None and fr.failed.any():
                found.append((plugin.name, fr))
        bad = np.zeros(delta.rows.size, dtype=np.bool_)
        for _name, fr in found:
            assert fr.failed is not None
            bad |= fr.failed != 0
        # Read the width and versions again: a filter may have widened the table (a resource no
        # node has), and then its answer belongs to the new width.
        verdicts = _Verdicts(
            delta,
            plugins,
            keys,
            nodes.requested.shape[1],
            nodes.row_version[delta.rows].tobytes(),
            found,
            delta.rows[bad],
        )
        self._last_verdicts = verdicts
        return verdicts

    def _rows_only(
        self,
        plugins: list[Any],
        pod: Pod,
        cluster: ClusterCache,
        state: CycleState,
        noms: _Nominations,
        feasible: np.ndarray,
        result: CycleResult,
        hint: BestRows | None,
    ) -> Narrowed | None:
        """The two-pass rule on every row with nominated pods, when only row-local filters run.

        Only ``plugins`` (the ones that read the pods on a node) are asked, about those rows only,
        with the pods handed over as a :class:`RowDelta` to add to what the cache holds (the cache
        itself is not touched); the other filters would answer as they did without the pods. A
        row that fails with the pods fails the cycle with the reasons of that pass, as upstream
        reports the pass with nominated pods first (:func:`_merge_first_pass`); a row that passes
        with them keeps the verdict it had without them. The cost does not grow with the cluster.
        """
        handle = self._handle
        v = self._verdicts(plugins, pod, cluster, state, noms.delta)
        if not v.found:
            return None
        failing = v.failing
        n = feasible.shape[0]

        def merge() -> None:
            _merge_first_pass(handle, result, plugins, v.found, v.delta.rows, failing, n)

        return _drop(feasible, failing, hint, merge)

    def _whole_profile(
        self,
        pod: Pod,
        cluster: ClusterCache,
        skipped: frozenset[str] | set[str],
        by_row: dict[int, list[Pod]],
        feasible: np.ndarray,
        result: CycleResult,
    ) -> np.ndarray | None:
        """The pass when some filter that runs cannot answer for a few rows: the nominated pods are
        counted on their rows and the whole profile's filters run again.

        Rows that fail now fail the cycle, with that pass's reasons appended to ``result.filters``
        (a row that had failed already keeps the reasons of the pass without nominated pods). Rows
        whose nominated pods no non-row-local filter of the plan cares about (:func:`relevance`;
        all rows when every filter that ran is row-local) share one pass, with the pods counted in
        the per-row accounting only (what row-local filters read): each row's verdict is then the
        one its own pass would give, since the other filters would not see those pods anyway.
        Every other row gets its own pass with its pods assumed in the cache, as upstream clones
        one NodeInfo at a time. Both go through the cache's what-if overlay, which undoes them
        exactly. Returns the narrowed copy of ``feasible``, or None when no row dropped out.
        """
        handle = self._handle
        rows = [r for r in by_row if feasible[r]]
        if not rows:
            return None
        if all(handle.is_row_local(p.name) for p in handle.filter_plugins if p.name not in skipped):
            batched, single = rows, []
        else:
            # Plugins skipped in this cycle stay skipped in the per-row passes (``skipped=``), as
            # upstream's do; asking the skipped ones too is merely conservative.
            relevant = relevance(handle.not_row_local_filters(pod), pod, cluster)
            if relevant is never:
                batched, single = rows, []
            elif relevant is always:
                batched, single = [], rows
            else:
                batched, single = [], []
                for r in rows:
                    (single if any(relevant(p) for p in by_row[r]) else batched).append(r)
        n = feasible.shape[0]
        out: np.ndarray | None = None
        groups = ([batched] if batched else []) + [[r] for r in single]
        for group in groups:
            if group is batched:
                delta = RowDelta([p for r in group for p in by_row[r]], [r for r in group for _ in by_row[r]])
                with cluster.what_if() as overlay:
                    delta.count_in(cluster, overlay)
                    sub = handle.run_filter_plugins_with_nominated_pods(pod, cluster, skipped=skipped)
            else:
                node_at = cluster.nodes.node
                with cluster.what_if(add=[(p, node_at(r).name) for r in group for p in by_row[r]]):
                    sub = handle.run_filter_plugins_with_nominated_pods(pod, cluster, skipped=skipped)
            sub_ok = sub.feasible
            bad = [r for r in group if sub_ok is None or not sub_ok[r]]
            if not bad:
                continue
            mask = np.zeros(n, dtype=np.bool_)
            mask[bad] = True
            if out is None:
                out = feasible.copy()
            out[mask] = False
            if sub.status.code == Code.ERROR or sub.prefilter_rejection is not None:
                s = sub.prefilter_rejection if sub.prefilter_rejection is not None else sub.status
                code = s.code if s.code.is_rejection else Code.UNSCHEDULABLE
                result.filters.append((s.plugin, FilterResult.from_mask(mask, s.message, code)))
                continue
            for plugin_name, fr in sub.filters:
                if fr.failed is None:
                    continue
                failed = np.where(mask, fr.failed[:n], np.uint64(0))
                if failed.any():
                    result.filters.append((plugin_name, FilterResult(failed, fr.reasons, fr.codes)))
        return out


def _by_node_names(pod: Pod, cluster: ClusterCache, nominated: NominatedPods) -> dict[int, list[Pod]]:
    """:meth:`NominatedPass._pods_by_row` for a ``NominatedPods`` with only ``pods_for_node``."""
    row_of = cluster.nodes.row_of
    names_of = getattr(nominated, "node_names", None)
    node_names = names_of() if names_of is not None else list(row_of)
    out: dict[int, list[Pod]] = {}
    for name in node_names:
        row = row_of.get(name)
        if row is None:
            continue
        pods = [
            p
            for p in nominated.pods_for_node(name)
            if p.uid != pod.uid and p.priority >= pod.priority and p.uid not in cluster
        ]
        if pods:
            out[row] = pods
    return out


def _filter_rows_key(plugin: Any, state: CycleState, pod: Pod, cluster: ClusterCache) -> object:
    """What ``plugin.filter_rows`` reads of ``pod`` (beyond the rows), as one object that is the
    very same object when a later pod would get the same answer; None: never reuse an answer."""
    key = getattr(plugin, "filter_rows_key", None)
    return None if key is None else key(state, pod, cluster)


def _row_subset_filters(handle: Handle, skipped: frozenset[str] | set[str]) -> list[Any] | None:
    """The filters the nominated-pods pass must re-ask, when each of them can answer for a few rows
    (``filter_rows``) and the others are :data:`POD_INDEPENDENT_FILTERS`; None otherwise (the pass
    then re-runs the whole profile)."""
    out: list[Any] = []
    for plugin in handle.filter_plugins:
        if plugin.name in skipped or plugin.name in POD_INDEPENDENT_FILTERS:
            continue
        if getattr(plugin, "filter_rows", None) is None:
            return None
        out.append(plugin)
    return out


def _merge_first_pass(
    handle: Handle,
    result: CycleResult,
    plugins: list[Any],
    found: list[tuple[str, FilterResult]],
    idx: np.ndarray,
    failing: np.ndarray,
    n: int,
) -> None:
    """Make ``result.filters`` report, on the ``failing`` rows, the pass with nominated pods.

    On those rows the bits of ``plugins`` (the filters that read a node's pods) become the ones
    from that pass (``found``, aligned with ``idx``; a plugin not in ``found`` passed them); the
    other filters' bits stand, since the pods do not change their verdict. Each plugin keeps its
    place in the configured order, so the first failure per row is the one upstream's pass with
    nominated pods stops at.
    """
    first_pass = dict(found)
    position = handle.filter_position
    entries = result.filters
    for plugin in plugins:
        name = plugin.name
        fr1 = first_pass.get(name)
        at = next((i for i, (pname, _) in enumerate(entries) if pname == name), None)
        if at is not None:
            old = entries[at][1]
            assert old.failed is not None
            if fr1 is None or (fr1.reasons == old.reasons and fr1.codes == old.codes):
                merged = old.failed[:n].copy()
                merged[failing] = 0
                if fr1 is not None:
                    assert fr1.failed is not None
                    merged[idx] |= fr1.failed
                entries[at] = (name, FilterResult(merged, old.reasons, old.codes))
                continue
            cleared = old.failed[:n].copy()
            cleared[failing] = 0
            entries[at] = (name, FilterResult(cleared, old.reasons, old.codes))
        if fr1 is None:
            continue
        assert fr1.failed is not None
        bits = np.zeros(n, dtype=np.uint64)
        bits[idx] = fr1.failed
        place = position(name)
        if place < 0:
            place = len(handle.filter_plugins)
        pos = next((i for i, (pname, _) in enumerate(entries) if position(pname) > place), len(entries))
        entries.insert(pos, (name, FilterResult(bits, fr1.reasons, fr1.codes)))


def _drop(
    feasible: np.ndarray, rows: np.ndarray, hint: BestRows | None, merge: Callable[[], None] | None
) -> Narrowed:
    """``feasible`` without ``rows``, with ``hint`` kept true for what is left (:mod:`.best_rows`)."""
    out, kept = without_rows(feasible, rows, hint)
    if out is None:  # every such row had failed already; at most its reasons change
        return Narrowed(feasible, False, hint, merge)
    return Narrowed(out, True, kept, merge)


__all__ = ["POD_INDEPENDENT_FILTERS", "Narrowed", "NominatedPass"]
