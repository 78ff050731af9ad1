"""PodTopologySpread end to end against the embedded cluster.

- The sim serves Services, ReplicationControllers, ReplicaSets and StatefulSets (list, watch,
  discovery), the scheduler's informers put them in the cache's selector-owner index, and deletes
  reach it too.
- A workload with a DoNotSchedule zone constraint is spread evenly over the zones; one that cannot
  be placed gets upstream's FailedScheduling message.
- The real kubectl can get the new resource types.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sched_harness import InProcessScheduler, bound_count, events_about, node_of, wait_until

from ksched.sim import SimCluster
from ksched.sim.workloads import node_template, pod_template
from tests.sim_admission import admission_off

StartScheduler = Callable[..., InProcessScheduler]
ZONE = "topology.kubernetes.io/zone"


def _template(app: str) -> dict[str, Any]:
    """A pod template the owner's selector selects (kube-apiserver refuses an owner without one)."""
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


WORKLOADS: list[tuple[str, dict[str, Any]]] = [
    (
        "services",
        {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    ),
    (
        "replicationcontrollers",
        {"metadata": {"name": "rc1"}, "spec": {"selector": {"app": "rc"}, "template": _template("rc")}},
    ),
    (
        "replicasets.apps",
        {
            "metadata": {"name": "rs1"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": _template("web")},
        },
    ),
    (
        "statefulsets.apps",
        {
            "metadata": {"name": "ss1"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": _template("db")},
        },
    ),
]


def _spread_pod(name: str, max_skew: int = 1) -> dict[str, Any]:
    body = pod_template(cpu="100m", memory="64Mi")
    body = {**body, "metadata": {**body.get("metadata", {}), "name": name, "labels": {"app": "spread"}}}
    body["spec"] = {
        **body["spec"],
        "topologySpreadConstraints": [
            {
                "maxSkew": max_skew,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            }
        ],
    }
    return body


def test_sched_informers_fill_the_selector_owner_index(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    for resource, body in WORKLOADS:
        sim.store.create(resource, body, namespace="default")
    sched = start_scheduler()

    def kinds(s: Any) -> list[str]:
        owners = s.cache.selector_owners
        return sorted(w.kind for k in ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")
                      for w in owners.objects(k))  # fmt: skip

    wait_until(lambda: len(sched.probe(kinds)) == 4, what="four selector owners in the cache")
    assert sched.probe(kinds) == ["ReplicaSet", "ReplicationController", "Service", "StatefulSet"]
    selector = sched.probe(
        lambda s: s.cache.selector_owners.default_selector("default", {"app": "web"}, None)
    )
    assert selector is not None and dict(selector.match_labels) == {"app": "web"}
    sim.store.delete("services", "web", "default")
    wait_until(lambda: len(sched.probe(kinds)) == 3, what="the deleted Service to leave the cache")


def test_sched_zone_spread_is_even(sim: SimCluster, start_scheduler: StartScheduler) -> None:
    sim.add_nodes(6, node_template(cpu="8", memory="32Gi"), zones=3)
    start_scheduler()
    for i in range(12):
        sim.store.create("pods", _spread_pod(f"spread-{i}"), namespace="default")
    wait_until(lambda: bound_count(sim) == 12, timeout=30, what="12 spread pods to be bound")
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE) for n in sim.store.list("nodes")}
    per_zone = Counter(zone_of[node_of(sim, f"spread-{i}")] for i in range(12))
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    assert len(per_zone) == len(set(zone_of.values()))


def test_sched_unsatisfiable_spread_reports_upstream_message(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    sim.add_nodes(3, node_template(cpu="8", memory="32Gi"), zones=2)
    start_scheduler()
    body = _spread_pod("nowhere")
    body["spec"]["topologySpreadConstraints"][0]["topologyKey"] = "rack"
    sim.store.create("pods", body, namespace="default")
    events = wait_until(lambda: events_about(sim, "nowhere", "FailedScheduling"), what="FailedScheduling")
    assert events[0]["note"].startswith(
        "0/3 nodes are available: "
        "3 node(s) didn't match pod topology spread constraints (missing required label)."
    )


def test_sched_invalid_constraint_is_an_error_not_a_crash(
    sim: SimCluster, start_scheduler: StartScheduler
) -> None:
    sim.add_nodes(3, node_template(cpu="8", memory="32Gi"), zones=2)
    sched = start_scheduler()
    bad = _spread_pod("bad")
    bad["spec"]["topologySpreadConstraints"][0]["maxSkew"] = 0
    with admission_off():  # kube-apiserver refuses it; a skewed server might not
        sim.store.create("pods", bad, namespace="default")
    sim.store.create("pods", _spread_pod("good"), namespace="default")
    wait_until(lambda: node_of(sim, "good"), what="the good pod to be bound")
    events = wait_until(lambda: events_about(sim, "bad", "FailedScheduling"), what="FailedScheduling for bad")
    note = events[0]["note"]
    assert "Pod default/bad" in note and "spec.topologySpreadConstraints[0].maxSkew" in note
    assert sched.error is None


@pytest.mark.kubectl
def test_kubectl_gets_the_new_resource_types(sim: SimCluster, kubeconfig: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    for resource, body in WORKLOADS:
        sim.store.create(resource, body, namespace="default")
    for short, name in (("svc", "web"), ("rc", "rc1"), ("rs", "rs1"), ("sts", "ss1")):
        proc = subprocess.run(
            [kubectl, "--kubeconfig", str(kubeconfig), "get", short, "-o", "name"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert name in proc.stdout
