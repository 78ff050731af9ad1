"""``Nominator.groups_at_least``: the per-priority view the nominated-pods pass reads every cycle."""

from __future__ import annotations

from ksched.scheduler.queue.nominator import Nominator
from tests.builders import pod


def _names(groups: tuple) -> list[tuple[str, list[str]]]:
    return [(node, [p.name for p in pods]) for node, pods in groups]


def test_groups_filter_by_priority_highest_first() -> None:
    nom = Nominator()
    nom.add(pod(name="low", uid="low", priority=0), "n1")
    nom.add(pod(name="high", uid="high", priority=10), "n1")
    nom.add(pod(name="mid", uid="mid", priority=5), "n2")
    assert _names(nom.groups_at_least(0)) == [("n1", ["high", "low"]), ("n2", ["mid"])]
    assert _names(nom.groups_at_least(6)) == [("n1", ["high"])]
    assert nom.groups_at_least(11) == ()


def test_groups_follow_every_change() -> None:
    nom = Nominator()
    a = pod(name="a", uid="a", priority=10)
    nom.add(a, "n1")
    first = nom.groups_at_least(0)
    assert nom.groups_at_least(0) is first  # remembered while nothing changes
    nom.add(pod(name="b", uid="b", priority=10), "n2")
    assert _names(nom.groups_at_least(0)) == [("n1", ["a"]), ("n2", ["b"])]
    nom.add(a, "n2")  # re-nominated elsewhere
    assert _names(nom.groups_at_least(0)) == [("n2", ["b", "a"])]
    nom.delete("b")
    nom.delete("a")
    assert nom.groups_at_least(0) == ()
    nom.delete("missing")  # unknown uids change nothing
    assert nom.groups_at_least(0) == ()
