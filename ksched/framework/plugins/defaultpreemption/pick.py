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

With many candidates left after the first two criteria (on a uniform cluster all of them are),
criteria 3-5 are computed as arrays over all their victims at once (:func:`pick_one`); the
candidate-by-candidate :func:`pick_one_reference` is what a property test holds it to.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

import numpy as np

from ksched.model.pod import Pod

MAX_INT32 = 2**31 - 1
_VECTOR_AT = 16
"""From this many candidates left for criterion 3 on, the array path is cheaper."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where evicting ``victims`` (most important first) lets the pod fit."""

    node: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int


def start_time(pod: Pod) -> float:
    """Upstream ``GetPodStartTime``: ``status.startTime``, or now (later than any recorded start)."""
    return pod.start_time if pod.start_time is not None else math.inf


def start_times(pods: Sequence[Pod]) -> np.ndarray:
    """:func:`start_time` of each pod as a float64 array.

    ``np.array`` turns None into NaN, but through a slow per-item path; not started is common (a
    whole cluster of pods without ``status.startTime``), so count the Nones first (an identity
    scan) and fill when all are None. A parsed start time is never NaN, so NaN marks exactly the
    Nones otherwise.
    """
    starts = [p.start_time for p in pods]
    missing = starts.count(None)
    if missing == len(starts):
        return np.full(len(starts), math.inf, dtype=np.float64)
    out = np.array(starts, dtype=np.float64)
    if missing:
        out[np.isnan(out)] = math.inf
    return out


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


def _keep_best(remaining: list[Candidate], score: Callable[[Candidate], float]) -> list[Candidate]:
    scores = [score(c) for c in remaining]
    best = max(scores)
    return [c for c, s in zip(remaining, scores, strict=True) if s == best]


def _keep_least(remaining: list[Candidate], values: list[int]) -> list[Candidate]:
    """:func:`_keep_best` for a score ``-value``: the candidates with the least value."""
    least = min(values)
    if values.count(least) == len(values):
        return remaining
    return [c for c, v in zip(remaining, values, strict=True) if v == least]


def pick_one_reference(candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate to nominate (None for an empty list), criterion by criterion in Python."""
    if not candidates:
        return None
    remaining = list(candidates)
    for score in _criteria():
        if len(remaining) == 1:
            break
        remaining = _keep_best(remaining, score)
    return remaining[0]


def pick_one(candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate to nominate (None for an empty list); as :func:`pick_one_reference`.

    Criteria 1 and 2 read one number per candidate. When many candidates tie on them, 3-5 need
    every victim's priority and start time: read once into arrays, then summed, maxed and
    minned per candidate with ``reduceat`` (exact: int64 sums of int32 priorities, the same
    float start times), instead of several generator passes per candidate.
    """
    if not candidates:
        return None
    remaining = list(candidates)
    if len(remaining) < _VECTOR_AT:
        for score in _criteria():
            if len(remaining) == 1:
                break
            remaining = _keep_best(remaining, score)
        return remaining[0]
    # Criteria 1 and 2 (higher -x is better: keep the smallest x), without a call per candidate.
    remaining = _keep_least(remaining, [c.num_pdb_violations for c in remaining])
    if len(remaining) == 1:
        return remaining[0]
    remaining = _keep_least(remaining, [c.victims[0].priority for c in remaining])
    if len(remaining) == 1:
        return remaining[0]
    if len(remaining) < _VECTOR_AT:
        for score in _criteria()[2:]:
            if len(remaining) == 1:
                break
            remaining = _keep_best(remaining, score)
        return remaining[0]
    # Criterion 2 indexed victims[0] of each: none is empty here.
    victims = [c.victims for c in remaining]
    lens = np.fromiter(map(len, victims), dtype=np.int64, count=len(victims))
    flat = list(chain.from_iterable(victims))
    prio = np.fromiter(map(attrgetter("priority"), flat), dtype=np.int64, count=len(flat))
    start = start_times(flat)
    heads = np.cumsum(lens) - lens
    shifted_sum = np.add.reduceat(prio, heads) + lens * (MAX_INT32 + 1)
    top = np.maximum.reduceat(prio, heads)
    earliest = np.minimum.reduceat(np.where(prio == np.repeat(top, lens), start, math.inf), heads)
    keep = np.arange(len(remaining))
    for score in (-shifted_sum, -lens, earliest):
        if keep.size == 1:
            break
        s = score[keep]
        keep = keep[s == s.max()]
    return remaining[int(keep[0])]
