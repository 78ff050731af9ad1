"""HTTP extenders end to end: the embedded cluster, a real ``ksched run`` process and extender servers
(``examples/extender/server.py``) each in its own process, on loopback.

Covered: a filter extender vetoing half the nodes, a prioritizer changing the choice, a binder that
binds itself, a preempt extender trimming the candidates, an ignorable extender that is down, a
non-ignorable one that is down and then comes up, and malformed replies (bad JSON, unknown nodes, a
20 MB body, a reply slower than httpTimeout): clear errors, no pod lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import ExtenderServer, free_port
from sched_harness import KschedProcess, bound_count, events_about, node_of, pods, wait_until

from ksched.sim import SimCluster
from ksched.sim.workloads import node_template, pod_template

Ksched = Callable[[str], KschedProcess]
Server = Callable[..., ExtenderServer]

HEAD = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {qps: 5000, burst: 5000}
leaderElection: {leaderElect: false}
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
extenders:
"""


def config(*extenders: dict[str, Any]) -> str:
    import json

    return HEAD + "".join(f"- {json.dumps(e)}\n" for e in extenders)


def nodes(sim: SimCluster, labelled: int, plain: int, **labels: str) -> None:
    if labelled:
        sim.add_nodes(labelled, node_template(labels=labels), name_prefix="yes-")
    if plain:
        sim.add_nodes(plain, node_template(), name_prefix="no-")


def failed_scheduling(sim: SimCluster, name: str) -> list[str]:
    return [str(e.get("note", "")) for e in events_about(sim, name, "FailedScheduling")]


def test_filter_extender_vetoes_half_the_nodes(
    sim: SimCluster, start_extender: Server, start_ksched: Ksched
) -> None:
    nodes(sim, 3, 3, extender="yes")
    ext = start_extender("--mode", "filter", "--filter-label", "extender=yes")
    proc = start_ksched(config({"urlPrefix": ext.url, "filterVerb": "filter"}))
    sim.add_pods(30, pod_template(cpu="100m", memory="100Mi"))
    wait_until(lambda: bound_count(sim) == 30, what="30 pods bound")
    assert {node_of(sim, p["metadata"]["name"]).split("-")[0] for p in pods(sim)} == {"yes"}
    assert (
        proc.metric("ksched_extender_request_duration_seconds_count", verb="filter", result="success") >= 30
    )


def test_node_objects_are_the_api_servers(
    sim: SimCluster, start_extender: Server, start_ksched: Ksched
) -> None:
    """A non-node-cache-capable extender gets the Node objects as the API server sent them: here it
    filters on an annotation, which the scheduler's own records do not keep."""
    marked = node_template()
    marked["metadata"]["annotations"] = {"extender": "yes"}
    sim.add_nodes(2, marked, name_prefix="yes-")
    sim.add_nodes(2, node_template(), name_prefix="no-")
    ext = start_extender("--mode", "filter", "--filter-annotation", "extender=yes")
    start_ksched(config({"urlPrefix": ext.url, "filterVerb": "filter"}))
    sim.add_pods(6, pod_template(cpu="100m", memory="100Mi"))
    wait_until(lambda: bound_count(sim) == 6, what="6 pods bound")
    assert {node_of(sim, p["metadata"]["name"]).split("-")[0] for p in pods(sim)} == {"yes"}


def test_filter_failures_in_the_failed_scheduling_message(
    sim: SimCluster, start_extender: Server, start_ksched: Ksched
) -> None:
    nodes(sim, 0, 2)
    ext = start_extender("--mode", "filter", "--filter-label", "extender=yes")
    start_ksched(config({"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": False}))
    sim.add_pods(1, pod_template(), name_prefix="lonely-")
    want = "0/2 nodes are available: 2 node(s) didn't have label extender=yes. preemption: "
    wait_until(
        lambda: any(n.startswith(want) for n in failed_scheduling(sim, "lonely-0")),
        what=f"FailedScheduling {want!r}",
    )


def test_prioritizer_changes_the_choice(
    sim: SimCluster, start_extender: Server, start_ksched: Ksched
) -> None:
    sim.add_nodes(1, node_template(labels={"score": "10"}), name_prefix="best-")
    sim.add_nodes(2, node_template(labels={"score": "0"}), name_prefix="other-")
    ext = start_extender("--mode", "prioritize", "--score-label", "score")
    start_ksched(config({"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 5}))
    sim.add_pods(6, pod_template(cpu="100m", memory="100Mi"))
    wait_until(lambda: bound_count(sim) == 6, what="6 pods bound")
    assert {node_of(sim, p["metadata"]["name"]) for p in pods(sim)} == {"best-0"}


def test_node_cache_capable_binder_binds(
    sim: SimCluster, start_extender: Server, start_ksched: Ksched
) -> None:
    nodes(sim, 2, 2, extender="yes")
    ext = start_extender("--mode", "filter,bind", "--filter-label", "extender=yes", "--api", sim.url)
    proc = start_ksched(
        config({"urlPrefix": ext.url, "filterVerb": "filter", "bindVerb": "bind", "nodeCacheCapable": True})
    )
    sim.add_pods(8, pod_template(cpu="100m", memory="100Mi"))
    wait_until(lambda: bound_count(sim) == 8, what="8 pods bound by the extender")
    assert {node_of(sim, p["metadata"]["name"]).split("-")[0] for p in pods(sim)} == {"yes"}
    assert proc.metric("ksched_extender_request_duration_seconds_count", verb="bind", result="success") == 8


def test_preempt_extender_trims_the_candidates(
    sim: SimCluster, start_extender: Server, start_ksched: Ksched
) -> None:
    sim.add_nodes(3, node_template(cpu="1"), name_prefix="n-")
    ext = start_extender("--mode", "preempt", "--preempt-nodes", "n-1")
    proc = start_ksched(config({"urlPrefix": ext.url, "preemptVerb": "preempt"}))
    sim.add_pods(3, pod_template(cpu="900m", memory="100Mi", priority=0), name_prefix="low-")
    wait_until(lambda: bound_count(sim) == 3, what="3 low-priority pods bound")
    victim = next(p["metadata"]["name"] for p in pods(sim) if node_of(sim, p["metadata"]["name"]) == "n-1")
    sim.add_pods(1, pod_template(cpu="900m", memory="100Mi", priority=1000), name_prefix="high-")
    wait_until(lambda: node_of(sim, "high-0") == "n-1", timeout=30, what="the preemptor on n-1")
    assert sim.store.get("pods", victim, "default") is None
    assert len(pods(sim)) == 3
    assert (
        proc.metric("ksched_extender_request_duration_seconds_count", verb="preempt", result="success") >= 1
    )


def test_ignorable_extender_down_is_skipped(sim: SimCluster, start_ksched: Ksched) -> None:
    nodes(sim, 0, 2)
    start_ksched(
        config({"urlPrefix": f"http://127.0.0.1:{free_port()}", "filterVerb": "filter", "ignorable": True})
    )
    sim.add_pods(5, pod_template())
    wait_until(lambda: bound_count(sim) == 5, what="5 pods bound without the extender")


def test_non_ignorable_extender_down_then_up(
    sim: SimCluster, start_extender: Server, start_ksched: Ksched
) -> None:
    nodes(sim, 2, 0, extender="yes")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    start_ksched(config({"urlPrefix": url, "filterVerb": "filter", "httpTimeout": "2s"}))
    sim.add_pods(3, pod_template(), name_prefix="wait-")
    want = f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    wait_until(lambda: want in failed_scheduling(sim, "wait-0"), what=f"FailedScheduling {want!r}")
    assert bound_count(sim) == 0
    start_extender("--mode", "filter", "--filter-label", "extender=yes", port=port)
    wait_until(lambda: bound_count(sim) == 3, timeout=30, what="the pods bound once the extender is up")


MALFORMED = [
    pytest.param("bad-json", {}, "filter reply: not valid JSON", id="bad JSON"),
    pytest.param(
        "unknown-node", {}, 'claims a filtered node "no-such-node" which is not found', id="unknown node"
    ),
    pytest.param("huge", {}, "filter reply is larger than 16777216 bytes", id="20 MB body"),
    pytest.param("slow", {"httpTimeout": "1s"}, "context deadline exceeded", id="slower than httpTimeout"),
    pytest.param("500", {}, "failed filter with extender at URL", id="HTTP 500"),
]


@pytest.mark.parametrize(("fault", "extra", "want"), MALFORMED)
def test_malformed_replies_fail_the_cycle_clearly(
    sim: SimCluster,
    start_extender: Server,
    start_ksched: Ksched,
    fault: str,
    extra: dict[str, Any],
    want: str,
) -> None:
    nodes(sim, 2, 0, extender="yes")
    ext = start_extender("--mode", "filter", "--fault", fault, "--slow-s", "3")
    proc = start_ksched(config({"urlPrefix": ext.url, "filterVerb": "filter", **extra}))
    sim.add_pods(2, pod_template(), name_prefix="bad-")
    wait_until(
        lambda: any(want in n for n in failed_scheduling(sim, "bad-0")),
        timeout=30,
        what=f"FailedScheduling {want!r}",
    )
    assert bound_count(sim) == 0
    assert len(pods(sim)) == 2
    assert proc.proc.poll() is None
    assert proc.metric("ksched_extender_request_duration_seconds_count", verb="filter", result="error") >= 1
