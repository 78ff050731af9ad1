"""NodeResourcesFit's queueing hints as tables: upstream fit_test.go's Test_isSchedulableAfterPodChange,
Test_isSchedulableAfterNodeChange, TestIsFit, TestHaveAnyRequestedResourcesIncreased and
TestEventsToRegister (v1.35), plus a case for the nominated-pod deletion that fit.go's hint checks and
no upstream row covers.

Not ported, because they need a feature-gate setting ksched does not have: Test_isSchedulableAfterPodChange's
"skip-queue-on-disable-inplace-pod-vertical-scaling" (InPlacePodVerticalScaling off; it is on in
v1.35 and ksched has no switch for it) and TestHaveAnyRequestedResourcesIncreased's
"requested-resources-dra-in-node", "-dra-not-in-node" and "-dra-zero-capacity" (the
DRAExtendedResource gate, off in v1.35; ksched does not model DRA)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.api import Handle, QueueingHint
from ksched.framework.plugins.noderesources import hints
from ksched.framework.plugins.noderesources.balanced_allocation import new_balanced_allocation
from ksched.framework.plugins.noderesources.fit import new_fit
from ksched.model.node import Node
from ksched.model.pod import Pod
from tests.builders import pod, pod_status
from tests.unit.framework.plugins.hints_support import (
    EXTENDED_A,
    EXTENDED_B,
    HUGE_PAGES_A,
    NOT_A_NODE,
    NOT_A_POD,
    SKIP,
    Q,
    capacity_node,
    resource_pod,
    spec_keys,
)


def cpu_pod(name: str, cpu: str, **kw: Any) -> Pod:
    """``st.MakePod().Name(name).UID(name).Req({cpu: ...})``."""
    return pod(name, uid=kw.pop("uid", name), requests={"cpu": cpu}, **kw)


def level_pod(name: str, requests: dict[str, str], **kw: Any) -> Pod:
    """``st.MakePod().Name(name).UID(name).PodLevelResourceRequests(requests)``."""
    return pod(name, uid=kw.pop("uid", name), resources={"requests": requests}, **kw)


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        pytest.param(pod("p"), NOT_A_POD, None, Q, id="backoff-wrong-old-object"),
        pytest.param(pod("p"), None, NOT_A_POD, Q, id="backoff-wrong-new-object"),
        pytest.param(
            cpu_pod("pod1", "1"),
            cpu_pod("pod2", "1", node_name="fake"),
            None,
            Q,
            id="queue-on-other-pod-deleted",
        ),
        pytest.param(pod("p"), pod("p"), None, SKIP, id="skip-queue-on-unscheduled-pod-deleted"),
        pytest.param(
            cpu_pod("pod1", "1", uid="uid0"),
            cpu_pod("pod2", "2", uid="uid1"),
            cpu_pod("pod2", "1", uid="uid1"),
            SKIP,
            id="skip-queue-on-other-unscheduled-pod",
        ),
        pytest.param(
            cpu_pod("pod1", "1"),
            pod("pod2", uid="pod2", requests={"memory": "2"}, node_name="fake"),
            pod("pod2", uid="pod2", requests={"memory": "1"}, node_name="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-resource-scaled-down",
        ),
        pytest.param(
            level_pod("pod1", {"cpu": "1"}),
            level_pod("pod2", {"memory": "2"}, node_name="fake"),
            level_pod("pod2", {"memory": "1"}, node_name="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        ),
        pytest.param(
            cpu_pod("pod1", "1"),
            cpu_pod("pod2", "2", node_name="fake"),
            cpu_pod("pod2", "1", node_name="fake"),
            Q,
            id="queue-on-other-pod-some-resource-scale-down",
        ),
        pytest.param(
            level_pod("pod1", {"cpu": "1"}),
            level_pod("pod2", {"cpu": "2"}, node_name="fake"),
            level_pod("pod2", {"cpu": "1"}, node_name="fake"),
            Q,
            id="queue-on-other-pod-some-pod-level-resource-scale-down",
        ),
        pytest.param(
            cpu_pod("pod1", "1"),
            cpu_pod("pod1", "2"),
            cpu_pod("pod1", "1"),
            Q,
            id="queue-on-target-pod-some-resource-scale-down",
        ),
        pytest.param(
            level_pod("pod1", {"cpu": "1"}),
            level_pod("pod1", {"cpu": "2"}),
            level_pod("pod1", {"cpu": "1"}),
            Q,
            id="queue-on-target-pod-some-pod-level-resource-scale-down",
        ),
        pytest.param(
            cpu_pod("pod1", "1"),
            cpu_pod("pod2", "1", status=pod_status(nominated_node_name="fake")),
            None,
            Q,
            id="queue-on-nominated-pod-deleted (fit.go, no upstream row)",
        ),
    ],
)
def test_after_pod_event(target: Pod, old: object, new: object, want: QueueingHint) -> None:
    assert hints.after_pod_event(target, old, new) == want


MEM2_A1 = resource_pod(memory=2, scalar={EXTENDED_A: 1})


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        pytest.param(pod("p"), None, NOT_A_NODE, Q, id="backoff-wrong-new-object"),
        pytest.param(pod("p"), NOT_A_NODE, capacity_node(), Q, id="backoff-wrong-old-object"),
        pytest.param(
            resource_pod(memory=2),
            None,
            capacity_node({"memory": 1}),
            SKIP,
            id="skip-queue-on-node-add-without-sufficient-resources",
        ),
        pytest.param(
            resource_pod(scalar={EXTENDED_A: 1}),
            None,
            capacity_node({EXTENDED_B: 1}),
            SKIP,
            id="skip-queue-on-node-add-without-required-resource-type",
        ),
        pytest.param(
            MEM2_A1,
            None,
            capacity_node({"memory": 4, EXTENDED_A: 2}),
            Q,
            id="queue-on-node-add-with-sufficient-resources",
        ),
        pytest.param(
            MEM2_A1,
            capacity_node({"memory": 2, EXTENDED_A: 2}),
            capacity_node({"memory": 2, EXTENDED_A: 1, EXTENDED_B: 2}),
            SKIP,
            id="skip-queue-on-node-unrelated-changes",
        ),
        pytest.param(
            MEM2_A1,
            capacity_node({"memory": 2, EXTENDED_A: 1}),
            capacity_node({"memory": 2, EXTENDED_A: 2}),
            Q,
            id="queue-on-pod-requested-resources-increase",
        ),
        pytest.param(
            MEM2_A1,
            capacity_node({"memory": 4, EXTENDED_A: 2}),
            capacity_node({"memory": 1, EXTENDED_A: 2}),
            SKIP,
            id="skip-queue-on-node-changes-from-suitable-to-unsuitable",
        ),
        pytest.param(
            MEM2_A1,
            capacity_node({"memory": 1, EXTENDED_A: 2}),
            capacity_node({"memory": 4, EXTENDED_A: 2}),
            Q,
            id="queue-on-node-changes-from-unsuitable-to-suitable",
        ),
    ],
)
def test_after_node_change(target: Pod, old: object, new: object, want: QueueingHint) -> None:
    assert hints.after_node_change(target, old, new) == want


def test_is_fit_nil_node() -> None:
    """TestIsFit "nil node": the hint's isFit is false for a missing node."""
    assert hints.after_node_change(pod("p"), None, None) == SKIP


@pytest.mark.parametrize(
    ("target", "node", "want"),
    [
        pytest.param(
            pod("p", requests={"cpu": "2"}), capacity_node({"cpu": "1"}), False, id="insufficient resource"
        ),
        pytest.param(
            pod("p", requests={"cpu": "1"}), capacity_node({"cpu": "2"}), True, id="sufficient resource"
        ),
        pytest.param(
            pod("p", resources={"requests": {"cpu": "2"}}),
            capacity_node({"cpu": "1"}),
            False,
            id="insufficient pod-level resource",
        ),
        pytest.param(
            pod("p", resources={"requests": {"cpu": "2"}}),
            capacity_node({"cpu": "2"}),
            True,
            id="sufficient pod-level resource",
        ),
        pytest.param(
            pod("p", resources={"requests": {HUGE_PAGES_A: "2Mi"}}),
            capacity_node({HUGE_PAGES_A: "2Mi"}),
            True,
            id="sufficient pod-level resource hugepages",
        ),
        pytest.param(
            pod("p", resources={"requests": {HUGE_PAGES_A: "4Mi"}}),
            capacity_node({HUGE_PAGES_A: "2Mi"}),
            False,
            id="insufficient pod-level resource hugepages",
        ),
    ],
)
def test_is_fit(target: Pod, node: Node, want: bool) -> None:
    assert hints.fits(target, node) is want


ALL_RES = {"milli_cpu": 2, "memory": 2, "ephemeral": 2, "scalar": {EXTENDED_A: 2}}
BASE_1234 = {"cpu": "1m", "memory": 2, "ephemeral-storage": 3, EXTENDED_A: 4}


@pytest.mark.parametrize(
    ("target", "old", "new", "want"),
    [
        pytest.param(
            resource_pod(),
            capacity_node({"pods": 1, "cpu": "1m", "memory": 1, "ephemeral-storage": 1, EXTENDED_A: 1}),
            capacity_node({"pods": 1, "cpu": "2m", "memory": 2, "ephemeral-storage": 2, EXTENDED_A: 2}),
            False,
            id="no-requested-resources",
        ),
        pytest.param(
            resource_pod(),
            capacity_node({"pods": 1, "cpu": "1m", "memory": 1, "ephemeral-storage": 1, EXTENDED_A: 1}),
            capacity_node({"pods": 2, "cpu": "1m", "memory": 1, "ephemeral-storage": 1, EXTENDED_A: 1}),
            True,
            id="no-requested-resources-pods-increased",
        ),
        pytest.param(
            resource_pod(**ALL_RES),
            capacity_node({"cpu": "1m", "memory": 2, "ephemeral-storage": 3}),
            capacity_node({"cpu": "1m", "memory": 2, "ephemeral-storage": 1}),
            False,
            id="scalar-resources-not-in-node",
        ),
        pytest.param(
            resource_pod(**ALL_RES),
            capacity_node(BASE_1234),
            capacity_node({"cpu": "1m", "memory": 2, "ephemeral-storage": 1, EXTENDED_A: 1}),
            False,
            id="requested-resources-decreased",
        ),
        pytest.param(
            resource_pod(**ALL_RES),
            capacity_node(BASE_1234),
            capacity_node({"cpu": "3m", "memory": 4, "ephemeral-storage": 3, EXTENDED_A: 4}),
            True,
            id="requested-resources-increased",
        ),
        pytest.param(
            resource_pod(milli_cpu=2, memory=2),
            capacity_node(BASE_1234),
            capacity_node({"cpu": "1m", "memory": 2, "ephemeral-storage": 1, EXTENDED_A: 1}),
            False,
            id="non-requested-resources-decreased",
        ),
        pytest.param(
            resource_pod(milli_cpu=2, memory=2),
            capacity_node(BASE_1234),
            capacity_node({"cpu": "1m", "memory": 2, "ephemeral-storage": 5, EXTENDED_A: 6}),
            False,
            id="non-requested-resources-increased",
        ),
    ],
)
def test_have_any_requested_resources_increased(target: Pod, old: Node, new: Node, want: bool) -> None:
    assert hints.requested_grew(target, old, new) is want


def test_events_to_register() -> None:
    """TestEventsToRegister with v1.35's gates (QueueingHints and InPlacePodVerticalScaling on,
    DRAExtendedResource off): upstream's table sets one gate per row; these are the two combined."""
    plugin = new_fit(None, Handle("p"))
    assert spec_keys(plugin.events_to_register()) == [
        ("Pod", frozenset({"Delete", "UpdatePodScaleDown"})),
        ("Node", frozenset({"Add", "UpdateNodeAllocatable"})),
    ]
    assert plugin.events_to_register() == list(plugin.queueing_hints())
    assert list(plugin.queueing_hints().values()) == [hints.after_pod_event, hints.after_node_change]


def test_ignored_resources_do_not_change_the_hints() -> None:
    """Upstream's hint checks the node with ``Fits`` and no ignored resources: a pod asking for an
    ignored extended resource still needs a node that has it."""
    assert hints.after_node_change(resource_pod(scalar={EXTENDED_A: 1}), None, capacity_node()) == SKIP


def test_balanced_allocation_registers_nothing() -> None:
    plugin = new_balanced_allocation(None, Handle("p"))
    assert plugin.events_to_register() == []
    assert plugin.queueing_hints() == {}
