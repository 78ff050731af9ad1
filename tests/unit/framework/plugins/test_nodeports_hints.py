"""NodePorts' queueing hint as a table: upstream node_ports_test.go's Test_isSchedulableAfterPodDeleted
(v1.35), plus rows written from the function for a nominated pod and for host IPs, and its
EventsToRegister with QueueingHints on."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.framework.api import Handle, QueueingHint, cluster_event
from ksched.framework.plugins.nodeports import hints, new
from ksched.model.pod import Pod
from tests.builders import container, pod, pod_status
from tests.unit.framework.plugins.hints_support import NOT_A_POD, SKIP, Q


def host_port(port: int, ip: str = "", name: str = "p", **kw: Any) -> Pod:
    """``st.MakePod().HostPort(port)`` (protocol TCP, any host IP unless ``ip``)."""
    return pod(name, containers=[container(host_ports=[("TCP", ip, port)])], **kw)


WANTS_8080 = host_port(8080)


@pytest.mark.parametrize(
    ("target", "deleted", "want"),
    [
        pytest.param(WANTS_8080, NOT_A_POD, Q, id="backoff-wrong-old-object"),
        pytest.param(WANTS_8080, pod("other"), SKIP, id="skip-queue-on-unscheduled"),
        pytest.param(WANTS_8080, pod("other", node_name="fake-node"), SKIP, id="skip-queue-on-non-hostport"),
        pytest.param(
            WANTS_8080,
            host_port(8081, name="other", node_name="fake-node"),
            SKIP,
            id="skip-queue-on-unrelated-hostport",
        ),
        pytest.param(
            WANTS_8080,
            host_port(8080, name="other", node_name="fake-node"),
            Q,
            id="queue-on-released-hostport",
        ),
        pytest.param(
            WANTS_8080,
            host_port(8080, name="other", status=pod_status(nominated_node_name="fake-node")),
            Q,
            id="a nominated pod held the port (node_ports.go, no upstream row)",
        ),
        pytest.param(
            host_port(8080, ip="10.0.0.1"),
            host_port(8080, ip="10.0.0.2", name="other", node_name="fake-node"),
            SKIP,
            id="the same port on another host IP (written from the function)",
        ),
        pytest.param(
            host_port(8080, ip="10.0.0.1"),
            host_port(8080, name="other", node_name="fake-node"),
            Q,
            id="the port on every host IP (written from the function)",
        ),
    ],
)
def test_after_pod_deleted(target: Pod, deleted: object, want: QueueingHint) -> None:
    assert hints.after_pod_deleted(target, deleted, None) == want


def test_events_to_register() -> None:
    """Upstream's EventsToRegister with QueueingHints on, in its order (Node/Add has no hint)."""
    plugin = new(None, Handle("p"))
    assert plugin.events_to_register() == [cluster_event("Pod", "Delete"), cluster_event("Node", "Add")]
    assert list(plugin.queueing_hints().values()) == [hints.after_pod_deleted, None]
