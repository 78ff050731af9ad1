"""The image's entrypoint with the Deployment's arguments, two replicas, against the embedded cluster.

The command line, its environment, the mounted KubeSchedulerConfiguration and the probe paths are
read from the Dockerfile and deploy/ (see deploy_harness). Each replica gets its own loopback address
as its pod IP, so both listen on the Deployment's port as two pods would.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deploy_harness import Replica, config_text, probe

from ksched.config import load_config
from ksched.sim import SimCluster
from ksched.sim.workloads import pod_template
from tests.integration.support import wait_until

POD_IPS = ("127.0.0.2", "127.0.0.3")


def _unbound(sim: SimCluster, prefix: str) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in sim.store.list("pods")
        if p["metadata"]["name"].startswith(prefix) and not (p.get("spec") or {}).get("nodeName")
    ]


def test_two_replicas_started_as_the_deployment_starts_them_schedule_with_one_leader(
    sim: SimCluster, kubeconfig: Path, tmp_path: Path, start_replica: Callable[[str, str, Path], Replica]
) -> None:
    cfg_path = tmp_path / "config.yaml"
    cfg_path.write_text(config_text())
    le = load_config(cfg_path).leader_election
    ready_path, port = probe("readinessProbe")
    live_path, live_port = probe("livenessProbe")
    replicas = [start_replica(f"replica-{i}", ip, kubeconfig) for i, ip in enumerate(POD_IPS)]

    sim.add_pods(20, pod_template(cpu="100m", memory="100Mi", scheduler_name="ksched"), name_prefix="opt-in-")
    sim.add_pods(2, pod_template(cpu="100m", memory="100Mi"), name_prefix="default-")

    for r in replicas:
        wait_until(
            lambda r=r: r.get(ready_path, port)[0] == 200 or not r.alive(),
            timeout_s=60,
            what=f"{r.name} ready",
        )
        assert r.alive(), f"{r.name} exited:\n{r.log()}"
        assert r.get(live_path, live_port) == (200, "ok")
    wait_until(
        lambda: not _unbound(sim, "opt-in-"), timeout_s=60, what="the schedulerName: ksched pods bound"
    )
    assert sorted(_unbound(sim, "default-")) == ["default-0", "default-1"], "other schedulers' pods are left"

    def leaders() -> list[Replica]:
        """The replicas whose identity holds the Lease (upstream's /readyz does not say who leads)."""
        lease = sim.store.get("leases", le.resource_name, le.resource_namespace) or {}
        holder = (lease.get("spec") or {}).get("holderIdentity")
        return [r for r in replicas if holder and f"as {holder}" in r.log() and r.alive()]

    (leader,) = wait_until(lambda: len(leaders()) == 1 and leaders(), what="exactly one leader")
    (standby,) = [r for r in replicas if r is not leader]
    assert standby.get(ready_path, port)[0] == 200, "a standby is ready too"
    lease = sim.store.get("leases", le.resource_name, le.resource_namespace)
    assert lease is not None, f"no Lease {le.resource_namespace}/{le.resource_name}"
    holder = lease["spec"]["holderIdentity"]
    assert f"as {holder}" in leader.log() and holder not in standby.log()
    assert "acquired" not in standby.log() and "became leader" not in standby.log()

    # A rolling update stops the leader with SIGTERM: it releases the Lease, the standby takes over.
    assert leader.terminate() == 0, leader.log()
    wait_until(lambda: leaders() == [standby], timeout_s=30, what="the standby to take over")
    sim.add_pods(5, pod_template(cpu="100m", memory="100Mi", scheduler_name="ksched"), name_prefix="later-")
    wait_until(lambda: not _unbound(sim, "later-"), timeout_s=30, what="pods bound by the new leader")
    assert standby.alive(), standby.log()
