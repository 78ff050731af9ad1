"""Same decisions: a recorded mixed workload replayed through the scheduler must give the golden
recording, pod by pod (issue 17's done-criterion for refactoring the framework).

The workload (:mod:`tests.differential.workload`) mixes plain pods, node affinity, pod affinity
and anti-affinity, topology spread, GPU pods behind a taint, pods that cannot be placed and
preemptors whose victims PodDisruptionBudgets protect. :mod:`tests.differential.replay` feeds it
to the real control loop with a simulated cluster and a fake clock. ``small`` (200 nodes) is the
quick local check; ``large`` (5,000 nodes) is the one a refactor must pass.

A failure shows the first pod whose decisions differ, expected against got. When the change is
intended, regenerate with ``PYTHONPATH=. python -m tests.differential.record`` and commit the
golden files with the change that explains them.
"""

from __future__ import annotations

import pytest

from tests.differential.recording import BOUND, FAILED, Recording, first_difference
from tests.differential.replay import golden_path, replay

REGENERATE = "PYTHONPATH=. python -m tests.differential.record"


@pytest.mark.parametrize(
    "size",
    [
        pytest.param("small", id="200 nodes"),
        pytest.param("large", id="5000 nodes", marks=pytest.mark.slow),
    ],
)
def test_decisions_match_the_golden_recording(size: str) -> None:
    expected = Recording.load(golden_path(size))
    got = replay(size)
    difference = first_difference(expected, got)
    if difference is not None:
        pytest.fail(f"{difference}\n\nIf this change is intended: {REGENERATE} {size}", pytrace=False)


def test_two_replays_are_the_same_bytes() -> None:
    assert replay("small").to_bytes() == replay("small").to_bytes()


def test_the_recording_covers_every_kind_of_decision() -> None:
    summary = Recording.load(golden_path("small")).summary()
    assert all(row["placed"] for kind, row in summary.items() if kind != "running")
    assert summary["preempt"]["preempting"] and summary["running"]["evicted"]
    assert summary["unsched"]["never_placed"] and summary["spread"]["failed"]


def test_a_difference_names_the_earliest_decision_and_the_pods_history() -> None:
    expected = Recording(workload={"size": "t"})
    expected.add("default/a", BOUND, "node-1")
    expected.add("default/b", FAILED, "0/2 nodes are available: 2 Insufficient cpu.")
    expected.add("default/b", BOUND, "node-2")
    got = Recording(workload={"size": "t"})
    got.add("default/a", BOUND, "node-1")
    got.add("default/b", BOUND, "node-1")
    text = first_difference(expected, got)
    assert text is not None
    assert text.splitlines() == [
        "decision #1 of 3 differs (1 of 2 pods differ in all):",
        '  expected: default/b ["failed", "0/2 nodes are available: 2 Insufficient cpu."]',
        '  got:      default/b ["bound", "node-1"]',
        "  default/b, decisions before #1 then after:",
        '    expected: | ["failed", "0/2 nodes are available: 2 Insufficient cpu."] ["bound", "node-2"]',
        '    got     : | ["bound", "node-1"]',
    ]
    assert first_difference(expected, Recording.from_bytes(expected.to_bytes())) is None


def test_a_changed_workload_is_reported_as_such() -> None:
    text = first_difference(Recording(workload={"digest": "a"}), Recording(workload={"digest": "b"}))
    assert text is not None and "the workload itself changed" in text
