"""The ``PodScheduled`` patch after a failed attempt, as upstream's ``updatePod`` sends it.

Upstream: ``pkg/scheduler/schedule_one.go`` (``handleSchedulingFailure``, ``updatePod``),
``pkg/api/v1/pod/util.go`` (``UpdatePodCondition``, ``CalculatePodConditionObservedGeneration``),
``pkg/scheduler/util/utils.go`` (``PatchPodStatus``: a two-way strategic merge patch from the old
status to the new one). Cases from upstream's ``TestUpdatePodCondition`` (scheduler) and
``pod_status_patch_test.go``; ``$setElementOrder/conditions``, which only restates the list's
order, is left out (the merged result is the same).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.reporting import Reporter, scheduled_condition_patch
from tests.builders import make_pod

NOW = 1_589_331_661.0
NOW_TEXT = "2020-05-13T01:01:01Z"
MSG = "0/3 nodes are available: 3 Insufficient cpu."


def _pod(
    condition: tuple[str, str, str] | None = None,
    *,
    observed: int = 0,
    generation: int = 0,
    nominated: str = "",
) -> Pod:
    raw = make_pod("foo")
    raw["metadata"]["generation"] = generation or None
    status: dict[str, Any] = {"nominatedNodeName": nominated} if nominated else {}
    if condition is not None:
        status["conditions"] = [
            {"type": "Ready", "status": "False"},
            {
                "type": "PodScheduled",
                "status": condition[0],
                "reason": condition[1],
                "message": condition[2],
                "lastProbeTime": None,
                "lastTransitionTime": "2020-05-12T00:00:00Z",
                **({"observedGeneration": observed} if observed else {}),
            },
        ]
    raw["status"] = status
    return pod_from_dict(raw)


def _entry(**fields: Any) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "PodScheduled", **fields}]}}


FULL = {
    "status": "False",
    "reason": "Unschedulable",
    "message": MSG,
    "lastProbeTime": None,
    "lastTransitionTime": NOW_TEXT,
}


@pytest.mark.parametrize(
    ("pod", "reason", "message", "nominated", "expected"),
    [
        pytest.param(
            _pod(),
            "Unschedulable",
            MSG,
            None,
            _entry(**FULL),
            id="add the condition when there is none: transition time now, probe time null",
        ),
        pytest.param(
            _pod(generation=3),
            "Unschedulable",
            MSG,
            None,
            _entry(**FULL, observedGeneration=3),
            id="a new condition observes the pod's generation",
        ),
        pytest.param(
            _pod(("True", "", "")),
            "Unschedulable",
            MSG,
            None,
            _entry(status="False", lastTransitionTime=NOW_TEXT, reason="Unschedulable", message=MSG),
            id="update an existing condition whose status changes: transition time now",
        ),
        pytest.param(
            _pod(("False", "SchedulingGated", "gated")),
            "Unschedulable",
            MSG,
            None,
            _entry(reason="Unschedulable", message=MSG),
            id="same status, new reason and message: the transition time stays (not in the patch)",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", "0/2 nodes are available")),
            "Unschedulable",
            MSG,
            None,
            _entry(message=MSG),
            id="same status and reason, new message: only the message",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", MSG)),
            "Unschedulable",
            MSG,
            None,
            None,
            id="no patch when the condition already exists and is identical",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", MSG), observed=1, generation=2),
            "Unschedulable",
            MSG,
            None,
            None,
            id="a new generation alone writes nothing: upstream's comparison leaves it out",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", "old"), observed=2, generation=2),
            "Unschedulable",
            MSG,
            None,
            _entry(message=MSG),
            id="observedGeneration unchanged: not in the patch",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", "old"), observed=1, generation=2),
            "Unschedulable",
            MSG,
            None,
            _entry(message=MSG, observedGeneration=2),
            id="observedGeneration follows the generation when the condition changes",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", MSG), generation=2),
            "Unschedulable",
            MSG,
            "node-a",
            {
                "status": {
                    "conditions": [{"type": "PodScheduled", "observedGeneration": 2}],
                    "nominatedNodeName": "node-a",
                }
            },
            id="a new nomination with the same condition: the patch also carries the new generation",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", MSG), nominated="node-a"),
            "Unschedulable",
            MSG,
            "",
            {"status": {"nominatedNodeName": None}},
            id="clearing the nomination, condition unchanged",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", MSG), nominated="node-a"),
            "Unschedulable",
            MSG,
            "node-a",
            None,
            id="no-op when condition and nominated node match",
        ),
        pytest.param(
            _pod(("False", "Unschedulable", MSG), nominated="node-a"),
            "SchedulerError",
            MSG,
            "node-b",
            {
                "status": {
                    "conditions": [{"type": "PodScheduled", "reason": "SchedulerError"}],
                    "nominatedNodeName": "node-b",
                }
            },
            id="condition and nominated node both change",
        ),
    ],
)
def test_scheduled_condition_patch(
    pod: Pod, reason: str, message: str, nominated: str | None, expected: dict[str, Any] | None
) -> None:
    assert scheduled_condition_patch(pod, reason, message, NOW, nominated=nominated) == expected


def test_the_record_carries_generation_and_the_conditions_observed_generation() -> None:
    pod = _pod(("False", "Unschedulable", MSG), observed=4, generation=5)
    assert pod.scheduled_condition == ("False", "Unschedulable", MSG)
    assert (pod.generation, pod.scheduled_observed_generation) == (5, 4)
    assert (_pod().generation, _pod().scheduled_observed_generation) == (0, 0)


class Sink:
    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []

    def patch_status(self, pod: Any, patch: dict[str, Any]) -> None:
        self.patches.append(patch)

    def event(self, body: dict[str, Any]) -> None:
        raise AssertionError("no event expected")


def test_repeated_failures_keep_the_first_transition_time() -> None:
    """Three failures with new messages: the first sets lastTransitionTime, the others leave it."""
    sink = Sink()
    clock = iter([NOW, NOW + 60, NOW + 120])
    reporter = Reporter(sink, wall_clock=lambda: next(clock), instance="h")
    pod = _pod()
    for i in range(3):
        reporter.not_scheduled(pod, "Unschedulable", f"{MSG} try {i}")
        pod = dataclasses.replace(pod, scheduled_condition=("False", "Unschedulable", f"{MSG} try {i}"))
    assert [c["status"]["conditions"][0].get("lastTransitionTime") for c in sink.patches] == [
        NOW_TEXT,
        None,
        None,
    ]
