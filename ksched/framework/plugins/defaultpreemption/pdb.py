"""PodDisruptionBudget accounting for victim selection (upstream ``filterPodsWithPDBViolation``).

Each budget starts at ``status.disruptionsAllowed``; every candidate victim it covers (same
namespace, selector matches, not already listed in ``status.disruptedPods``) takes one off, and a
victim is *violating* once some budget that covers it goes below zero. Upstream's selector rules
apply: a budget with a nil or empty selector covers no pod, and so does one whose selector does not
parse (it is logged once, not fatal: a bad object in the cluster must not stop scheduling).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from ksched.errors import ObjectError
from ksched.model.pdb import PodDisruptionBudget
from ksched.model.pod import Pod
from ksched.model.selectors import LabelSelector, parse_label_selector

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Budget:
    """A budget reduced to what victim selection reads."""

    namespace: str
    selector: LabelSelector
    allowed: int
    disrupted: frozenset[str]


class BudgetParser:
    """Turns cache PDB records into :class:`Budget` lists, remembering parses by record identity.

    PDB records are immutable and replaced on update, so a record seen before parses the same way;
    an invalid selector is logged the first time its record is seen.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[PodDisruptionBudget, Budget | None]] = {}

    def budgets(self, pdbs: Iterable[PodDisruptionBudget]) -> list[Budget]:
        out: list[Budget] = []
        memo = self._memo
        seen: set[int] = set()
        for pdb in pdbs:
            key = id(pdb)
            seen.add(key)
            hit = memo.get(key)
            if hit is None or hit[0] is not pdb:
                hit = (pdb, _budget(pdb))
                memo[key] = hit
            if hit[1] is not None:
                out.append(hit[1])
        if len(memo) > 2 * len(seen) + 64:
            for key in [k for k in memo if k not in seen]:
                del memo[key]
        return out


def _budget(pdb: PodDisruptionBudget) -> Budget | None:
    try:
        selector = parse_label_selector(pdb.selector, pdb.described, "spec.selector")
    except ObjectError as exc:
        log.warning("ignoring %s in preemption: its selector is invalid: %s", pdb.described, exc)
        return None
    if selector is None or selector.empty:
        return None  # upstream: a nil or empty selector matches nothing here
    return Budget(pdb.namespace, selector, pdb.disruptions_allowed, pdb.disrupted_pods)


class BudgetIndex:
    """One dry run's budgets, remembering which of them cover each distinct (namespace, labels).

    Callers pass a key per pod that identifies its namespace and labels (the cache's label-set
    id); pods sharing a key share the selector matching, which is most of the cost.
    """

    def __init__(self, budgets: Sequence[Budget]) -> None:
        self.budgets = budgets
        self._memo: dict[Hashable, tuple[int, ...]] = {}

    def covering(self, pod: Pod, key: Hashable) -> tuple[int, ...]:
        hit = self._memo.get(key)
        if hit is None:
            hit = ()
            if pod.labels:  # a pod without labels matches no budget
                hit = tuple(
                    i
                    for i, b in enumerate(self.budgets)
                    if b.namespace == pod.namespace and b.selector.matches(pod.labels)
                )
            self._memo[key] = hit
        return hit

    def split(self, pods: Sequence[Pod], keys: Sequence[Hashable]) -> list[bool]:
        """Per pod (in order), whether evicting it, after the ones before it, violates a budget."""
        budgets = self.budgets
        allowed = [b.allowed for b in budgets]
        out: list[bool] = []
        for pod, key in zip(pods, keys, strict=True):
            hit = False
            for i in self.covering(pod, key):
                if pod.name in budgets[i].disrupted:
                    continue  # the API server already counted this eviction
                allowed[i] -= 1
                if allowed[i] < 0:
                    hit = True
            out.append(hit)
        return out


def split_by_violation(pods: Sequence[Pod], budgets: Sequence[Budget]) -> tuple[list[Pod], list[Pod]]:
    """(violating, non-violating), each keeping the order of ``pods``."""
    flags = BudgetIndex(budgets).split(pods, [(p.namespace, tuple(sorted(p.labels.items()))) for p in pods])
    return [p for p, f in zip(pods, flags, strict=True) if f], [
        p for p, f in zip(pods, flags, strict=True) if not f
    ]
