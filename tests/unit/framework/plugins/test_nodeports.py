"""NodePorts, ported from upstream ``pkg/scheduler/framework/plugins/nodeports/node_ports_test.go``
(TestNodePorts, 13 cases) and the conflict table of ``HostPortInfo`` (TestHostPortInfo_Check in
``pkg/scheduler/framework/types_test.go``, 9 cases), each run through the plugin: the "added"
ports belong to a pod already bound to the node, the "check" port is the incoming pod's.
"""

from __future__ import annotations

import pytest

from ksched.framework.interface import Code, CycleState
from ksched.framework.plugins.nodeports import ERR_REASON, NodePorts, new
from ksched.framework.runtime import Framework
from tests.builders import cluster_of, container, make_node, make_pod, pod

Port = tuple[str, str, int]


def ports(*specs: str) -> list[Port]:
    """Upstream's ``"PROTO/IP/PORT"`` notation."""
    out = []
    for spec in specs:
        proto, ip, port = spec.split("/")
        out.append((proto, ip, int(port)))
    return out


def run_filter(existing: list[Port], wanted: list[Port]) -> tuple[bool, list[str], Code]:
    """(prefilter skipped, filter reasons, code) for one node holding a pod that uses ``existing``."""
    bound = make_pod("existing", node_name="m1", containers=[container(host_ports=existing)])
    cluster = cluster_of([make_node("m1")], [bound])
    incoming = pod(containers=[container(host_ports=wanted)])
    plugin = NodePorts()
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, cluster)
    if status.code == Code.SKIP:
        return True, [], Code.SUCCESS
    assert status.ok
    reasons, code = plugin.filter(state, incoming, cluster).reasons_at(0)
    return False, reasons, code


NODE_PORTS = [
    pytest.param([], [], "skip", id="skip filter"),
    pytest.param(ports("UDP/127.0.0.1/9090"), ports("UDP/127.0.0.1/8080"), None, id="other port"),
    pytest.param(ports("UDP/127.0.0.1/8080"), ports("UDP/127.0.0.1/8080"), ERR_REASON, id="same udp port"),
    pytest.param(ports("TCP/127.0.0.1/8080"), ports("TCP/127.0.0.1/8080"), ERR_REASON, id="same tcp port"),
    pytest.param(ports("TCP/127.0.0.2/8080"), ports("TCP/127.0.0.1/8080"), None, id="different host ip"),
    pytest.param(ports("TCP/127.0.0.1/8080"), ports("UDP/127.0.0.1/8080"), None, id="different protocol"),
    pytest.param(
        ports("UDP/127.0.0.1/8080"),
        ports("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ERR_REASON,
        id="second udp port conflict",
    ),
    pytest.param(
        ports("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        ports("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ERR_REASON,
        id="first tcp port conflict",
    ),
    pytest.param(
        ports("TCP/127.0.0.1/8001"),
        ports("TCP/0.0.0.0/8001"),
        ERR_REASON,
        id="first tcp port conflict due to 0.0.0.0 hostIP",
    ),
    pytest.param(
        ports("TCP/127.0.0.1/8001"),
        ports("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ERR_REASON,
        id="TCP hostPort conflict due to 0.0.0.0 hostIP",
    ),
    pytest.param(
        ports("TCP/0.0.0.0/8001"),
        ports("TCP/127.0.0.1/8001"),
        ERR_REASON,
        id="second tcp port conflict to 0.0.0.0 hostIP",
    ),
    pytest.param(
        ports("TCP/0.0.0.0/8001"), ports("UDP/127.0.0.1/8001"), None, id="second different protocol"
    ),
    pytest.param(
        ports("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        ports("UDP/127.0.0.1/8001"),
        ERR_REASON,
        id="UDP hostPort conflict due to 0.0.0.0 hostIP",
    ),
]


@pytest.mark.parametrize(("existing", "wanted", "want"), NODE_PORTS)
def test_node_ports(existing: list[Port], wanted: list[Port], want: str | None) -> None:
    skipped, reasons, code = run_filter(existing, wanted)
    if want == "skip":
        assert skipped
        return
    assert not skipped
    if want is None:
        assert reasons == []
    else:
        assert reasons == [want] == ["node(s) didn't have free ports for the requested pod ports"]
        assert code == Code.UNSCHEDULABLE


HOST_PORT_CHECK = [
    pytest.param(
        [("TCP", "127.0.0.1", 80)], ("", "", 81), False, id="empty check should check 0.0.0.0 and TCP"
    ),
    pytest.param(
        [("TCP", "127.0.0.1", 80)],
        ("", "", 80),
        True,
        id="empty check should check 0.0.0.0 and TCP (conflicted)",
    ),
    pytest.param([("TCP", "127.0.0.1", 80)], ("", "", 0), False, id="empty port check should pass"),
    pytest.param(
        [("TCP", "127.0.0.1", 80)], ("TCP", "0.0.0.0", 80), True, id="0.0.0.0 should check all registered IPs"
    ),
    pytest.param(
        [("UDP", "127.0.0.1", 80)],
        ("TCP", "0.0.0.0", 80),
        False,
        id="0.0.0.0 with different protocol should be allowed",
    ),
    pytest.param(
        [("TCP", "127.0.0.1", 79), ("TCP", "127.0.0.1", 81), ("TCP", "127.0.0.1", 82)],
        ("TCP", "0.0.0.0", 80),
        False,
        id="0.0.0.0 with different port should be allowed",
    ),
    pytest.param(
        [("TCP", "0.0.0.0", 80)],
        ("TCP", "127.0.0.1", 80),
        True,
        id="normal ip should check all registered 0.0.0.0",
    ),
    pytest.param(
        [("TCP", "0.0.0.0", 79), ("UDP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 81), ("TCP", "0.0.0.0", 82)],
        ("TCP", "127.0.0.1", 80),
        False,
        id="normal ip with different port/protocol should be allowed (0.0.0.0)",
    ),
    pytest.param(
        [
            ("TCP", "127.0.0.1", 79),
            ("UDP", "127.0.0.1", 80),
            ("TCP", "127.0.0.1", 81),
            ("TCP", "127.0.0.1", 82),
        ],
        ("TCP", "127.0.0.1", 80),
        False,
        id="normal ip with different port/protocol should be allowed",
    ),
]


@pytest.mark.parametrize(("added", "check", "conflict"), HOST_PORT_CHECK)
def test_host_port_info_check(added: list[Port], check: Port, conflict: bool) -> None:
    _, reasons, _ = run_filter(added, [check])
    assert (reasons == [ERR_REASON]) == conflict


def test_sidecar_ports_count_and_plain_init_ports_do_not() -> None:
    bound = make_pod("existing", node_name="m1", containers=[container(host_ports=ports("TCP/0.0.0.0/80"))])
    cluster = cluster_of([make_node("m1")], [bound])
    plugin = NodePorts()
    sidecar = pod(
        init_containers=[container("s", host_ports=ports("TCP/0.0.0.0/80"), restart_policy="Always")]
    )
    assert plugin.filter(CycleState(), sidecar, cluster).reasons_at(0)[0] == [ERR_REASON]
    plain_init = pod(init_containers=[container("i", host_ports=ports("TCP/0.0.0.0/80"))])
    assert plugin.pre_filter(CycleState(), plain_init, cluster)[1].code == Code.SKIP


def test_explain_names_the_port() -> None:
    bound = make_pod("existing", node_name="m1", containers=[container(host_ports=ports("UDP/10.0.0.1/53"))])
    cluster = cluster_of([make_node("m1")], [bound])
    p = pod(containers=[container(host_ports=ports("TCP/0.0.0.0/80", "UDP/0.0.0.0/53"))])
    assert NodePorts().explain_row(p, cluster, 0) == "host port UDP/0.0.0.0:53 is already in use"


def test_framework_run() -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    fw = Framework("default-scheduler", pre_filter=[plugin], filters=[plugin])
    busy = make_pod("web-1", node_name="a", containers=[container(host_ports=ports("TCP/0.0.0.0/8080"))])
    cluster = cluster_of([make_node("a"), make_node("b")], [busy])
    wants = pod(containers=[container(host_ports=ports("TCP/0.0.0.0/8080"))])
    assert fw.schedule_pod(wants, cluster).selected_node == "b"
    cluster.remove_node("b")
    failed = fw.schedule_pod(wants, cluster)
    assert failed.selected_node is None
    assert (
        failed.message()
        == "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    )
