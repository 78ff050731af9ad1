"""Preemption's ``callExtenders``, with an in-process fake extender.

Ported as data from upstream ``pkg/scheduler/framework/preemption/preemption_test.go`` (``TestPreempt``,
the extender cases): extenders that keep only node1, that keep nothing, an ignorable one that errors,
one not interested in the pod; plus the checks of ``callExtenders`` itself (a non-ignorable error
ends the preemption, a node reported without victims is an error or, for an ignorable extender,
dropped). Upstream's fake extender runs its predicates on the candidate nodes; ``trim_to`` is that
predicate's outcome written out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.errors import ExtenderError
from ksched.framework.extender import Victims, call_extenders
from ksched.framework.handle import HandleServices
from ksched.framework.interface import Code
from ksched.framework.plugins.defaultpreemption import DefaultPreemption
from ksched.framework.plugins.noderesources import new_fit
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import pod_from_dict
from tests.unit.extenders.extender_support import FakeExtender
from tests.unit.framework.plugins.preemption_support import HIGH, LARGE, LOW, VERY_LARGE, cluster, node, vpod


class Failing(FakeExtender):
    def process_preemption(self, pod: Any, victims: Any, cluster: Any) -> Any:
        raise ExtenderError("fake", "preempt", "some error")


class NoVictims(FakeExtender):
    def process_preemption(self, pod: Any, victims: Any, cluster: Any) -> Any:
        return {n: Victims(()) for n in victims}


def run(extenders: list[FakeExtender]) -> Any:
    nodes = [node("node1"), node("node2"), node("node3")]
    pods = [
        vpod("p1", "node1", priority=LOW, req=VERY_LARGE, start=1),
        vpod("p2", "node2", priority=LOW, req=VERY_LARGE, start=2),
        vpod("p3", "node3", priority=LOW, req=LARGE, start=3),
    ]
    cache = cluster(nodes, pods)
    handle = Handle(
        "default-scheduler", rng=np.random.default_rng(0), services=HandleServices(extenders=tuple(extenders))
    )
    plugin = DefaultPreemption(None, handle)
    plugin.offset_for = lambda n: 0
    fit = new_fit(None, Handle("default-scheduler"))
    fw = Framework("default-scheduler", pre_filter=[fit], filters=[fit], post_filter=[plugin], handle=handle)
    preemptor = pod_from_dict(vpod("preemptor", priority=HIGH, req=LARGE))
    result = fw.schedule_pod(preemptor, cache)
    assert result.status.code == Code.UNSCHEDULABLE
    return fw.run_post_filter(preemptor, cache, result)


CASES = [
    # (id, extenders, want nominated node | "status: <code> <message>")
    ("no extenders: the node with the least important victims", [], "node3"),
    (
        "extenders allow only node1",
        [FakeExtender(preempt=True), FakeExtender(preempt=True, trim_to=frozenset({"node1"}))],
        "node1",
    ),
    (
        "extenders do not allow any preemption",
        [FakeExtender(preempt=True, trim_to=frozenset())],
        "status: UNSCHEDULABLE no candidate node for preemption",
    ),
    (
        "one allows only node1, the other errors but is ignorable",
        [Failing(preempt=True, ignorable=True), FakeExtender(preempt=True, trim_to=frozenset({"node1"}))],
        "node1",
    ),
    (
        "one allows only node1 but is not interested in the pod",
        [FakeExtender(preempt=True, trim_to=frozenset({"node1"}), managed=frozenset({"example.com/foo"}))],
        "node3",
    ),
    (
        "an extender without a preempt verb is not asked",
        [FakeExtender(trim_to=frozenset({"node1"}))],
        "node3",
    ),
    ("a non-ignorable error ends the preemption", [Failing(preempt=True)], "status: ERROR some error"),
    (
        "a node without victims is an error",
        [NoVictims(preempt=True)],
        'status: ERROR expected at least one victim pod on node "node1"',
    ),
    (
        "an ignorable extender's node without victims is dropped",
        [NoVictims(preempt=True, ignorable=True)],
        "status: UNSCHEDULABLE no candidate node for preemption",
    ),
]


@pytest.mark.parametrize(("extenders", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_preempt_with_extenders(extenders: list[FakeExtender], want: str) -> None:
    out = run(extenders)
    if want.startswith("status: "):
        code, _, message = want.removeprefix("status: ").partition(" ")
        assert out.status.code == Code[code]
        assert out.status.message == message
        assert out.keep_nomination
    else:
        assert out.status.code == Code.SUCCESS, out.status.message
        assert out.nominated_node == want


def test_call_extenders_passes_candidates_in_turn() -> None:
    first = FakeExtender(preempt=True, trim_to=frozenset({"a", "b"}))
    second = FakeExtender(preempt=True, trim_to=frozenset({"b"}))
    p = pod_from_dict(vpod("v", "a"))
    victims = {n: Victims((p,)) for n in ("a", "b", "c")}
    got, error = call_extenders([first, second], p, None, victims)  # type: ignore[arg-type]
    assert error is None and list(got) == ["b"]
    assert second.calls == [("preempt", ("a", "b"))]
