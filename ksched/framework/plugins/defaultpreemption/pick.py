"""Which candidate node to preempt on (upstream ``pickOneNodeForPreemption``) and victim order.

Criteria, each keeping only the tied-best nodes until one is left:

1. fewest PodDisruptionBudget violations;
2. lowest priority of the most important victim;
3. smallest sum of victim priorities, each shifted by ``MaxInt32 + 1`` so that negative priorities
   cannot make more victims look cheaper;
4. fewest victims;
5. latest "earliest start time among the highest-priority victims";
6. the first remaining candidate. Upstream takes the first in Go map order (effectively random);
   here it is the first in candidate order (non-violating first, then from the random offset), so
   a seeded run is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ksched.model.pod import Pod

MAX_INT32 = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where evicting ``victims`` (most important first) lets the pod fit."""

    node: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int


def start_time(pod: Pod) -> float:
    """Upstream ``GetPodStartTime``: ``status.startTime``, or now (later than any recorded start)."""
    return pod.start_time if pod.start_time is not None else math.inf


def importance_key(pod: Pod) -> tuple[int, float]:
    """Sort key, most important first (upstream ``MoreImportantPod``): higher priority, then
    earlier start."""
    return (-pod.priority, start_time(pod))


def earliest_start_of_top_priority(victims: Sequence[Pod]) -> float:
    """Upstream ``GetEarliestPodStartTime``: earliest start among the highest-priority victims."""
    top = max(p.priority for p in victims)
    return min(start_time(p) for p in victims if p.priority == top)


def _criteria() -> list[Callable[[Candidate], float]]:
    # Higher is better for each, as upstream's score functions.
    return [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_top_priority(c.victims),
    ]


def pick_one(candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate to nominate (None for an empty list)."""
    if not candidates:
        return None
    remaining = list(candidates)
    for score in _criteria():
        if len(remaining) == 1:
            break
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
    return remaining[0]
