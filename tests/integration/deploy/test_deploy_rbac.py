"""deploy/base/rbac.yaml grants exactly what ksched uses: every API call is allowed, and every grant is used.

Two sources of truth, both read from the code, never restated here:

- dynamic: `ksched run`, started as the Deployment starts it, runs against an embedded cluster that
  records every request (deploy_harness.RequestLog) through scenarios that make it use each kind of
  call: informers, bindings, a binding refused with 409 (the pod is read back), an unschedulable pod
  (FailedScheduling event, PodScheduled patch; retried until its Event gets a series), a pod that
  fits only by preempting another (the victim deleted, statuses patched), lease create/renew and the
  release on SIGTERM;
- static: the informer list of ksched/runner.py, so a list/watch permission cannot drift even for a
  resource no scenario happens to touch.

A grant that neither source justifies must be in PENDING, with the reason it is granted ahead of the
code; the dynamic test fails as soon as the code justifies an entry, so that it gets removed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from deploy_harness import ApiCall, Grant, Replica, RequestLog, allows, grants, parse_request

from ksched.runner import _informers
from ksched.scheduler.inbox import Inbox
from ksched.server import delegation
from ksched.sim import FaultConfig, SimCluster
from ksched.sim.workloads import node_template, pod_template
from tests.integration.support import wait_until

_READER = (
    "the built-in Role extension-apiserver-authentication-reader, bound as every delegating component "
    "is; ksched re-reads the ConfigMap with a GET every minute instead of watching it"
)
PENDING: dict[tuple[str, str, str], str] = {
    ("list", "", "configmaps"): _READER,
    ("watch", "", "configmaps"): _READER,
}
"""(verb, group, resource) granted before the code makes the call -> why. Keep it empty when possible."""

NON_RESOURCE_ALLOWED = frozenset({"/version", "/api", "/apis"})
"""Non-resource paths every authenticated user may GET (the default system:discovery role)."""


def _informer_calls() -> set[ApiCall]:
    """list and watch of every resource ksched/runner.py runs an informer for."""
    out = set()
    for informer in _informers(cast(Any, None), Inbox()):
        for verb, query in (("list", {}), ("watch", {"watch": "true"})):
            call = parse_request("GET", informer.path, query)
            assert call.verb == verb and call.resource, (
                f"informer path {informer.path} is not a resource list"
            )
            out.add(call)
    return out


def _delegated_auth_calls() -> set[ApiCall]:
    """What the secure port's delegated authentication and authorization ask the API server (from
    ksched/server/delegation.py): in a pod it has the in-cluster account, so every replica makes
    these calls, though the recorded run (given a kubeconfig, no in-cluster account) does not."""
    return {
        parse_request("GET", delegation.CONFIGMAP_PATH, {}),
        parse_request("POST", delegation.TOKEN_REVIEWS, {}),
        parse_request("POST", delegation.ACCESS_REVIEWS, {}),
    }


def test_delegated_authentication_and_authorization_are_granted() -> None:
    mine = grants()
    for call in _delegated_auth_calls():
        assert any(allows(g, call) for g in mine), f"rbac: no grant for {call.verb} {call.rule_resource}"


def _key(g: Grant) -> tuple[str, str, str]:
    return (g.verb, g.group, g.resource)


def test_every_informer_may_list_and_watch() -> None:
    mine = grants()
    for call in _informer_calls():
        assert any(allows(g, call) for g in mine), f"rbac.yaml: no grant for {call.verb} {call.rule_resource}"
    assert not any("*" in (g.verb, g.group, g.resource) or "*" in g.names for g in mine), "no wildcards"


def _pods(sim: SimCluster, prefix: str) -> list[dict[str, Any]]:
    return [p for p in sim.store.list("pods") if p["metadata"]["name"].startswith(prefix)]


def _all_bound(sim: SimCluster, prefix: str) -> bool:
    found = _pods(sim, prefix)
    return bool(found) and all((p.get("spec") or {}).get("nodeName") for p in found)


def _event_about(sim: SimCluster, name: str, reason: str) -> bool:
    return any(
        (ev.get("involvedObject") or ev.get("regarding") or {}).get("name") == name
        and ev.get("reason") == reason
        for ev in sim.store.list("events")
    )


def _run_scenarios(sim: SimCluster, log: RequestLog, replica: Replica) -> None:
    small = pod_template(cpu="100m", memory="100Mi", scheduler_name="ksched")
    # Victims-to-be: low priority, most of each node's cpu.
    sim.add_pods(
        3, pod_template(cpu="1500m", memory="100Mi", priority=0, scheduler_name="ksched"), name_prefix="low-"
    )
    wait_until(lambda: _all_bound(sim, "low-"), timeout_s=60, what="the low-priority pods bound")
    # Nothing fits: a FailedScheduling event and the PodScheduled=False condition.
    sim.add_pods(1, pod_template(cpu="64", memory="100Mi", scheduler_name="ksched"), name_prefix="huge-")
    wait_until(lambda: _event_about(sim, "huge-0", "FailedScheduling"), what="FailedScheduling for huge-0")
    _repeat_failures(sim, log, "huge-0")
    # A binding refused with 409: ksched reads the pod back to see whether the binding was its own.
    sim.faults.configure(FaultConfig(binding_conflict_rate=1.0))
    sim.add_pods(1, small, name_prefix="conflict-")
    wait_until(
        lambda: any(c.verb == "get" and c.resource == "pods" and c.name == "conflict-0" for c in log.calls),
        what="the pod read back after a refused binding",
    )
    sim.faults.configure(FaultConfig())
    wait_until(lambda: _all_bound(sim, "conflict-"), what="conflict-0 bound once bindings are accepted")
    # Fits only if a low-priority pod goes: preemption (deletes a victim, patches statuses).
    sim.add_pods(
        1,
        pod_template(cpu="1500m", memory="100Mi", priority=1000, scheduler_name="ksched"),
        name_prefix="high-",
    )
    wait_until(lambda: _all_bound(sim, "high-"), timeout_s=30, what="the preemptor bound after preemption")
    # VolumeBinding's PreBind: a claim to provision gets the selected node, a static volume the claimRef.
    _volume_scenarios(sim, log)
    # The leader renews its Lease every retryPeriod; SIGTERM releases it.
    wait_until(
        lambda: any(c.verb == "update" and c.resource == "leases" for c in log.calls),
        timeout_s=30,
        what="a Lease renewal",
    )
    assert replica.terminate() == 0, replica.log()


def _repeat_failures(sim: SimCluster, log: RequestLog, name: str) -> None:
    """Make the unschedulable pod fail again until its FailedScheduling Event gets a series (a
    PATCH): each deleted bound pod is a cluster event that retries it, failing the same way."""
    fillers = [f"filler-{i}" for i in range(4)]
    for filler in fillers:
        body = pod_template(cpu="10m", memory="10Mi")
        body["metadata"] = {"name": filler}
        body["spec"]["nodeName"] = "node-0"
        sim.store.create("pods", body, namespace="default")

    def patched() -> bool:
        return any(c.verb == "patch" and c.resource == "events" for c in log.calls)

    for filler in fillers:
        time.sleep(0.5)  # one retry per deletion, not several folded into one
        sim.store.delete("pods", filler, "default", grace_period_s=0)
        if patched():
            break
    wait_until(patched, what=f"the series PATCH of {name}'s FailedScheduling Event")


def _volume_scenarios(sim: SimCluster, log: RequestLog) -> None:
    for name, provisioner in (
        ("rbac-wffc", "csi.example.com"),
        ("rbac-local", "kubernetes.io/no-provisioner"),
    ):
        sim.store.create(
            "storageclasses",
            {
                "metadata": {"name": name},
                "provisioner": provisioner,
                "volumeBindingMode": "WaitForFirstConsumer",
            },
        )
    sim.store.create(
        "persistentvolumes",
        {
            "metadata": {"name": "rbac-pv"},
            "spec": {
                "storageClassName": "rbac-local",
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": "csi.example.com", "volumeHandle": "rbac-pv"},
            },
            "status": {"phase": "Available"},
        },
    )
    for claim, cls in (("rbac-provisioned", "rbac-wffc"), ("rbac-static", "rbac-local")):
        spec = {
            "storageClassName": cls,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        }
        sim.store.create(
            "persistentvolumeclaims", {"metadata": {"name": claim, "namespace": "default"}, "spec": spec}
        )
        obj = pod_template(cpu="100m", memory="100Mi", scheduler_name="ksched")
        obj["metadata"]["name"] = f"pod-{claim}"
        obj["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        sim.store.create("pods", obj)
    for resource in ("persistentvolumeclaims", "persistentvolumes"):
        wait_until(
            lambda r=resource: any(c.verb == "update" and c.resource == r for c in log.calls),
            timeout_s=30,
            what=f"VolumeBinding's PreBind update of {resource}",
        )


def test_rbac_allows_every_call_of_a_running_ksched_and_nothing_more(
    recorded_sim: tuple[SimCluster, RequestLog],
    tmp_path: Path,
    start_replica: Callable[[str, str, Path], Replica],
) -> None:
    sim, log = recorded_sim
    sim.add_nodes(3, node_template(cpu="2", memory="8Gi"))
    replica = start_replica("rbac", "127.0.0.4", sim.write_kubeconfig(tmp_path / "kubeconfig"))
    _run_scenarios(sim, log, replica)

    mine = grants()
    seen = log.resource_calls()
    denied = sorted(
        {
            (c.verb, c.group, c.rule_resource, c.namespace, c.name)
            for c in seen
            if not any(allows(g, c) for g in mine)
        }
    )
    assert not denied, (
        f"rbac.yaml does not allow these calls ksched made (verb, group, resource, ns, name): {denied}"
    )
    non_resource = {c.path for c in log.calls if c.path}
    assert non_resource <= NON_RESOURCE_ALLOWED, f"non-resource requests: {sorted(non_resource)}"

    used = seen | _informer_calls() | _delegated_auth_calls()
    unused = sorted(
        f"{g.origin}: {g.verb} {g.group or 'core'}/{g.resource}"
        for g in mine
        if not any(allows(g, c) for c in used) and _key(g) not in PENDING
    )
    assert not unused, (
        f"rbac.yaml grants what ksched never does (remove, or add to PENDING with a reason): {unused}"
    )
    landed = sorted(
        f"{k}: {PENDING[k]}"
        for k in PENDING
        if any(_key(g) == k and any(allows(g, c) for c in used) for g in mine)
    )
    assert not landed, f"the code now makes these calls: remove them from PENDING: {landed}"
