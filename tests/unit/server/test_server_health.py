"""Health checks as upstream's healthz package and kube-scheduler's leader-election watchdog."""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from ksched.kube.events import Deleted, Upserted
from ksched.server.health import LEADER_ELECTION_TIMEOUT_S, Health, checks, leader_check, root_handler
from ksched.server.resources import PodResources, unit, value


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def _health(clock: Clock, renewed: float, *, leading: bool = True) -> Health:
    return Health(
        leader_election=True,
        leading=leading,
        last_renewal=lambda: renewed,
        lease_duration_s=15,
        lease_name="kube-scheduler",
        clock=clock,
    )


def test_leader_check_tolerates_lease_duration_plus_20s() -> None:
    clock = Clock()
    assert leader_check(_health(clock, renewed=clock.now - 15 - LEADER_ELECTION_TIMEOUT_S)) is None
    assert leader_check(_health(clock, renewed=clock.now - 35.1)) == (
        "failed election to renew leadership on lease kube-scheduler"
    )
    assert leader_check(_health(clock, renewed=0, leading=False)) is None, "a standby is healthy"


def test_check_names_per_endpoint() -> None:
    names = {k: [n for n, _ in v] for k, v in checks(Health(leader_election=True)).items()}
    assert names == {
        "healthz": ["leaderElection"],
        "livez": ["ping"],
        "readyz": ["leaderElection", "shutdown", "sched-handler-sync"],
    }
    assert [n for n, _ in checks(Health())["healthz"]] == ["ping"]


def _get(handler: object, query: str) -> web.Response:
    request = make_mocked_request("GET", f"/readyz{query}")
    return asyncio.run(handler(request))  # type: ignore[operator]


def test_readyz_output() -> None:
    health = Health(synced=False)
    handler = root_handler("readyz", checks(health)["readyz"])
    failing = _get(handler, "?verbose")
    assert failing.status == 500
    assert (
        failing.text == "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"
    )
    health.synced = True
    assert (_get(handler, "").status, _get(handler, "").text) == (200, "ok")
    assert _get(handler, "?verbose").text == "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n"
    health.stopping = True
    excluded = _get(handler, "?exclude=shutdown&exclude=nope&verbose")
    assert excluded.text == (
        "[+]shutdown excluded: ok\n[+]sched-handler-sync ok\n"
        'warn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n'
    )


class _Pod:
    def __init__(self, name: str, node: str, phase: str = "Running") -> None:
        self.uid, self.namespace, self.name, self.node_name = name, "default", name, node
        self.scheduler_name, self.priority, self.phase = "default-scheduler", 0, phase
        self.requests = {"cpu": 1500, "memory": 1 << 20, "nvidia.com/gpu": 1}


def test_resource_metrics_units_and_terminal_pods() -> None:
    leading = {"v": True}
    res = PodResources(lambda: leading["v"])
    for pod in (_Pod("a", "n1"), _Pod("done", "n1", "Succeeded"), _Pod("pending", "")):
        res.observe(Upserted("pods", pod))
    text = res.exposition().decode()
    assert (
        'kube_pod_resource_request{namespace="default",node="n1",pod="a",priority="0",resource="cpu",'
        'scheduler="default-scheduler",unit="cores"} 1.5'
    ) in text
    assert 'pod="done"' not in text and 'pod="pending"' in text
    assert 'resource="nvidia.com/gpu",scheduler="default-scheduler",unit=""} 1.0' in text
    res.observe(Deleted("pods", _Pod("a", "n1")))
    assert 'pod="a"' not in res.exposition().decode()
    leading["v"] = False
    assert "kube_pod_resource_request{" not in res.exposition().decode(), "only the leader reports"
    assert (unit("hugepages-2Mi"), unit("attachable-volumes-csi-x"), value("cpu", 250)) == (
        "bytes",
        "integer",
        0.25,
    )
