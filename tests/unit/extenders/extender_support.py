"""An in-process fake of an external extender (upstream ``pkg/scheduler/testing/framework/fake_extender.go``).

Predicates and prioritizers are functions of a node name, as upstream's fake: a predicate answers
True (fits), False (fails with ``FakeExtender: node "<name>" failed``) or raises (an error); a
prioritizer returns the node's score 0..10, the extender's score being the prioritizers' weighted
sum, as upstream's ``FakeExtender.Prioritize`` computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ksched.cache.reader import ClusterReader
from ksched.errors import ExtenderError
from ksched.framework.extender import DoneScores, FilterVerdict, PendingScores, Victims, interested_in
from ksched.model.node import Node
from ksched.model.pod import Pod

Predicate = Callable[[str], bool]
Prioritizer = Callable[[str], int]


def true_predicate(_node: str) -> bool:
    return True


def false_predicate(_node: str) -> bool:
    return False


def error_predicate(_node: str) -> bool:
    raise ExtenderError("fake", "filter", "some error")


def only(name: str) -> Predicate:
    return lambda node: node == name


def prefer(name: str) -> Prioritizer:
    """Upstream ``machineNPrioritizerExtender``: 10 for ``name``, 1 for the others."""
    return lambda node: 10 if node == name else 1


def error_prioritizer(_node: str) -> int:
    raise ExtenderError("fake", "prioritize", "some error")


@dataclass
class FakeExtender:
    predicates: Sequence[Predicate] = ()
    prioritizers: Sequence[tuple[Prioritizer, int]] = ()
    weight: int = 0
    ignorable: bool = False
    binder: bool = False
    preempt: bool = False
    managed: frozenset[str] = frozenset()
    unresolvable: bool = False
    ext_name: str = "FakeExtender"
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    bound: list[tuple[str, str]] = field(default_factory=list)
    trim_to: frozenset[str] | None = None

    @property
    def name(self) -> str:
        return self.ext_name

    def is_interested(self, pod: Pod) -> bool:
        return interested_in(self.managed, pod)

    def is_filter(self) -> bool:
        return bool(self.predicates)

    def is_prioritizer(self) -> bool:
        return bool(self.prioritizers)

    def is_binder(self) -> bool:
        return self.binder

    def supports_preemption(self) -> bool:
        return self.preempt

    def is_ignorable(self) -> bool:
        return self.ignorable

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> FilterVerdict:
        names = tuple(n.name for n in nodes)
        self.calls.append(("filter", names))
        passed, failed = [], {}
        for name in names:
            if all(pred(name) for pred in self.predicates):
                passed.append(name)
            else:
                failed[name] = f'FakeExtender: node "{name}" failed'
        if self.unresolvable:
            return FilterVerdict(tuple(passed), {}, failed)
        return FilterVerdict(tuple(passed), failed, {})

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> PendingScores:
        names = tuple(n.name for n in nodes)
        self.calls.append(("prioritize", names))
        try:
            scores = [(n, sum(fn(n) * w for fn, w in self.prioritizers)) for n in names]
        except ExtenderError as exc:
            return DoneScores([], exc)
        return DoneScores(scores)

    def bind(self, pod: Pod, node: str) -> None:
        self.bound.append((pod.name, node))

    def process_preemption(
        self, pod: Pod, victims: Mapping[str, Victims], cluster: ClusterReader
    ) -> dict[str, Victims]:
        self.calls.append(("preempt", tuple(victims)))
        if self.trim_to is None:
            return dict(victims)
        return {n: v for n, v in victims.items() if n in self.trim_to}
