"""One chaos run: a cluster with faults on, two ``ksched run`` replicas with leader election, the
leader SIGKILLed or partitioned off the API server while pods stream in, and an end state checked
against an oracle of our own.

A partitioned leader (``ChaosParams.partitions``; whole replica or only its Lease client, refused
or black-holed in turn, see ``failover``) must stop writing once it cannot renew, exit, and be
replaced; the sim's write audit must show none of its writes after its lease expired.

The oracle does not use ksched's parsers or plugins: every pod and node is generated here from a
small :class:`PodSpec` / :class:`NodeSpec`, and :func:`fits_empty` / :func:`check_end_state` decide
fitting from those (integer millicores and bytes, label and taint rules written out). The cluster has
enough spare room that every pod that fits on some empty node can be placed at once, so "fits" means
"must end up bound"; every other pod must carry a ``FailedScheduling`` event and a
``PodScheduled=False`` condition.
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from failover import binds_of, deposition, identity_in, partition_rule
from sched_harness import KschedProcess, write_config

from ksched.sim import ErrorRule, FaultConfig, LatencyRule, SimCluster, SimConfig
from tests.integration.support import wait_until

MI = 1024**2
GI = 1024**3
ZONES = 4
GPU = "example.com/gpu"
DEDICATED = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    zone: str
    ssd: bool
    gpu: int
    """GPUs; gpu nodes carry the ``dedicated=gpu:NoSchedule`` taint."""
    unschedulable: bool
    cpu_m: int = 4000
    memory: int = 16 * GI
    pods: int = 110

    def manifest(self) -> dict[str, Any]:
        labels = {"kubernetes.io/hostname": self.name, "topology.kubernetes.io/zone": self.zone}
        if self.ssd:
            labels["disk"] = "ssd"
        capacity = {"cpu": f"{self.cpu_m}m", "memory": str(self.memory), "pods": str(self.pods)}
        spec: dict[str, Any] = {}
        if self.gpu:
            capacity[GPU] = str(self.gpu)
            spec["taints"] = [dict(DEDICATED)]
        if self.unschedulable:
            spec["unschedulable"] = True
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
            "spec": spec,
            "status": {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }


@dataclass(frozen=True, slots=True)
class PodSpec:
    name: str
    cpu_m: int
    memory: int
    gpu: int = 0
    tolerates_gpu: bool = False
    selector: dict[str, str] = field(default_factory=dict)
    zones: tuple[str, ...] = ()
    """Required node affinity: zone In zones (empty: none)."""
    host_port: int = 0
    priority: int | None = None
    soft_spread: bool = False

    def manifest(self) -> dict[str, Any]:
        requests = {"cpu": f"{self.cpu_m}m", "memory": f"{self.memory // MI}Mi"}
        if self.gpu:
            requests[GPU] = str(self.gpu)
        container: dict[str, Any] = {
            "name": "c",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": requests, "limits": dict(requests)},
        }
        if self.host_port:
            container["ports"] = [{"containerPort": 80, "hostPort": self.host_port, "protocol": "TCP"}]
        spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
        if self.tolerates_gpu:
            spec["tolerations"] = [
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ]
        if self.selector:
            spec["nodeSelector"] = dict(self.selector)
        if self.zones:
            term = {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(self.zones)}
                ]
            }
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            }
        if self.priority is not None:
            spec["priority"] = self.priority
        labels = {"app": f"a{int(self.name[1:]) % 7}"}
        if self.soft_spread:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": labels["app"]}},
                }
            ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": "default", "labels": labels},
            "spec": spec,
        }


def make_nodes(count: int) -> list[NodeSpec]:
    return [
        NodeSpec(
            name=f"n{i}",
            zone=f"zone-{i % ZONES}",
            ssd=i % 5 == 0,
            gpu=8 if i % 10 == 1 else 0,
            unschedulable=i % 25 == 2,
        )
        for i in range(count)
    ]


def make_pods(count: int, rng: random.Random) -> list[PodSpec]:
    """Mixed traits; about 2 % cannot fit anywhere (too big, no matching node, untolerated taint)."""
    out = []
    for j in range(count):
        cpu = rng.choice((100, 150, 200, 250))
        mem = rng.choice((128, 256, 384)) * MI
        prio = rng.choice((None, 0, 100, 1000))
        name = f"p{j}"
        kind = j % 50
        if kind in (0, 1, 2, 3, 4):
            spec = PodSpec(name, cpu, mem, selector={"disk": "ssd"}, priority=prio)
        elif kind in (5, 6, 7):
            spec = PodSpec(name, cpu, mem, gpu=1, tolerates_gpu=True, priority=prio)
        elif kind in (8, 9, 10):
            spec = PodSpec(name, cpu, mem, zones=("zone-0", "zone-1"), priority=prio)
        elif kind in (11, 12):
            spec = PodSpec(name, cpu, mem, host_port=8080 + (j // 50) % 2, priority=prio)
        elif kind in (13, 14):
            spec = PodSpec(name, cpu, mem, soft_spread=True, priority=prio)
        elif kind == 15:
            spec = PodSpec(name, 64_000, mem)  # bigger than any node
        elif kind == 16 and j % 100 == 16:
            spec = PodSpec(name, cpu, mem, selector={"disk": "nvme"})  # no such node
        elif kind == 16:
            spec = PodSpec(name, cpu, mem, gpu=1)  # gpu nodes are tainted, no toleration
        else:
            spec = PodSpec(name, cpu, mem, priority=prio, tolerates_gpu=kind == 17)
        out.append(spec)
    return out


def fits_empty(p: PodSpec, n: NodeSpec) -> bool:
    """Whether ``p`` fits on ``n`` with nothing else on it (the static part of the oracle)."""
    if n.unschedulable:
        return False
    if n.gpu and not p.tolerates_gpu:
        return False
    labels = {"disk": "ssd"} if n.ssd else {}
    if any(labels.get(k) != v for k, v in p.selector.items()):
        return False
    if p.zones and n.zone not in p.zones:
        return False
    return p.cpu_m <= n.cpu_m and p.memory <= n.memory and p.gpu <= n.gpu


@dataclass(frozen=True, slots=True, kw_only=True)
class ChaosParams:
    nodes: int
    pods: int
    waves: int
    kills: int
    timeout_s: float
    partitions: int = 0
    """Leaders partitioned off the API server (after the kills, alternating with them)."""
    seed: int = 7
    lease_s: float = 6.0
    renew_s: float = 5.0
    retry_s: float = 0.5


def fault_config(seed: int) -> FaultConfig:
    """The issue's mix: 5 % 500/503, 2 % 429 with Retry-After, 2 % bindings refused with 409, watch
    streams dropped every 1,000 events, 100 ms latency spikes on 2 % of requests."""
    return FaultConfig(
        seed=seed,
        errors=(
            ErrorRule(code=500, rate=0.025),
            ErrorRule(code=503, rate=0.025, retry_after_s=1),
            ErrorRule(code=429, rate=0.02, retry_after_s=1),
        ),
        latency=(LatencyRule(ms=100, rate=0.02),),
        watch_drop_every=1000,
        binding_conflict_rate=0.02,
    )


@dataclass
class ChaosResult:
    scheduled: int = 0
    unschedulable: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    audit: dict[str, int] = field(default_factory=dict)
    double_binds: int = 0
    kills: int = 0
    seconds: float = 0.0
    survivors: list[str] = field(default_factory=list)
    bound_at_kills: list[int] = field(default_factory=list)
    """Pods bound (of those created so far) when each leader was killed or partitioned."""
    partitions: list[str] = field(default_factory=list)
    """``scope/mode`` of each partition, in order."""
    takeovers_s: list[float] = field(default_factory=list)
    """From each partition to the next holder of the Lease."""
    late_writes: int = 0
    """Writes of partitioned leaders that reached the store after their lease expired: must be 0."""
    deposed_writes: list[int] = field(default_factory=list)
    """Writes each partitioned leader landed before it stopped."""
    last_write_s: list[float] = field(default_factory=list)
    """From each partitioned leader's last accepted renewal to its last write that landed."""

    def line(self) -> str:
        takeovers = ", ".join(f"{t:.2f}" for t in self.takeovers_s)
        return (
            f"chaos: {self.scheduled} pods scheduled, {self.unschedulable} unschedulable, "
            f"{self.double_binds} double binds, {self.kills} leader SIGKILLs, "
            f"{len(self.partitions)} partitions {self.partitions} (takeovers [{takeovers}]s, "
            f"deposed leaders' writes {self.deposed_writes}, the last "
            f"[{', '.join(f'{t:.2f}' for t in self.last_write_s)}]s after their last renewal, "
            f"{self.late_writes} after their lease expired) "
            f"(at {self.bound_at_kills} bound), "
            f"{self.seconds:.1f}s; "
            f"faults injected {dict(sorted(self.faults.items()))}; "
            f"binding audit {dict(sorted(self.audit.items()))}"
        )


class Replicas:
    """``ksched run`` processes with leader election; killed ones are replaced, as a Deployment would."""

    def __init__(self, sim: SimCluster, kubeconfig: Path, config: Path, tmp: Path) -> None:
        self.sim, self.kubeconfig, self.config, self.tmp = sim, kubeconfig, config, tmp
        self.procs: list[KschedProcess] = []
        self.killed: list[KschedProcess] = []

    def start(self) -> KschedProcess:
        proc = KschedProcess(f"r{len(self.procs)}", self.kubeconfig, self.config, self.tmp, leader_elect=True)
        self.procs.append(proc)
        return proc

    def holder(self) -> str:
        lease = self.sim.store.get("leases", "kube-scheduler", "kube-system") or {}
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    def leader(self) -> KschedProcess | None:
        ident = self.holder()
        if not ident:
            return None
        for proc in self.procs:
            if proc not in self.killed and proc.proc.poll() is None and f" as {ident}" in proc.log():
                return proc
        return None

    def kill_leader(self, timeout: float) -> None:
        leader = wait_until(self.leader, timeout_s=timeout, interval_s=0.1, what="a leader to kill")
        leader.proc.send_signal(signal.SIGKILL)
        leader.proc.wait(10)
        self.killed.append(leader)
        self.start()

    def partition_leader(self, scope: str, mode: str, params: ChaosParams, result: ChaosResult) -> None:
        """Cut the leader off until a standby holds the Lease; it must exit 1, writing nothing late."""

        def binding_leader() -> KschedProcess | None:
            proc = self.leader()
            return proc if proc is not None and binds_of(self.sim, identity_in(proc.log())) else None

        leader = wait_until(binding_leader, timeout_s=params.timeout_s / 4, interval_s=0.1, what="a leader")
        ident = identity_in(leader.log())
        self.start()  # its replacement, as a Deployment would start one
        t0 = time.monotonic()
        self.sim.faults.set_partitions((partition_rule(ident, scope, mode),))
        try:
            wait_until(
                lambda: self.holder() not in ("", ident),
                timeout_s=params.lease_s * 3,
                interval_s=0.02,
                what=f"a standby to take the Lease from {ident}",
            )
            result.takeovers_s.append(time.monotonic() - t0)
            rc = leader.proc.wait(params.renew_s * 3)
        finally:
            self.sim.faults.set_partitions(())
        self.killed.append(leader)
        assert rc == 1 and "Leaderelection lost" in leader.log(), leader.log()[-3000:]
        dep = deposition(self.sim, ident, params.lease_s)
        result.partitions.append(f"{scope}/{mode}")
        result.late_writes += len(dep.late)
        result.deposed_writes.append(dep.writes)
        result.last_write_s.append(dep.last_write_after_renewal_s)

    def alive(self) -> list[KschedProcess]:
        return [p for p in self.procs if p not in self.killed]

    def close(self) -> None:
        for proc in self.procs:
            proc.close()


def _sim_config(seed: int) -> SimConfig:
    return SimConfig(
        history_window=20_000, bookmark_interval_s=0.5, running_delay_s=0.05, grace_scale=0.0, seed=seed
    )


def _condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return dict(c)
    return None


def _failed_scheduling(sim: SimCluster) -> set[str]:
    """Names of pods that have at least one FailedScheduling event (core/v1 view)."""
    return {
        (ev.get("involvedObject") or {}).get("name", "")
        for ev in sim.store.list("events")
        if ev.get("reason") == "FailedScheduling"
    }


def _bound_names(sim: SimCluster) -> set[str]:
    pods = sim.store.list("pods", "default")
    return {p["metadata"]["name"] for p in pods if (p.get("spec") or {}).get("nodeName")}


def _bound_a_third(sim: SimCluster, names: set[str]) -> bool:
    return len(_bound_names(sim) & names) >= max(1, len(names) // 3)


def _progress(sim: SimCluster, fit: set[str], unfit: set[str]) -> tuple[int, int]:
    bound = unfit_done = 0
    pods = {p["metadata"]["name"]: p for p in sim.store.list("pods", "default")}
    failed = _failed_scheduling(sim) if unfit else set()
    for name, p in pods.items():
        if name in fit and (p.get("spec") or {}).get("nodeName"):
            bound += 1
        elif name in unfit and name in failed and ((_condition(p) or {}).get("status") == "False"):
            unfit_done += 1
    return bound, unfit_done


def run_chaos(params: ChaosParams, tmp: Path) -> ChaosResult:
    rng = random.Random(params.seed)
    nodes = make_nodes(params.nodes)
    specs = make_pods(params.pods, rng)
    rng.shuffle(specs)
    fit = {p.name for p in specs if any(fits_empty(p, n) for n in nodes)}
    unfit = {p.name for p in specs} - fit
    result = ChaosResult()
    sim = SimCluster(_sim_config(params.seed), faults=fault_config(params.seed))
    sim.store.bulk_create("nodes", [n.manifest() for n in nodes])
    sim.start()
    replicas: Replicas | None = None
    t0 = time.monotonic()
    try:
        kubeconfig = sim.write_kubeconfig(tmp / "kubeconfig")
        config = write_config(
            tmp / "ksched.yaml",
            leader_elect=True,
            lease=params.lease_s,
            renew=params.renew_s,
            retry=params.retry_s,
        )
        replicas = Replicas(sim, kubeconfig, config, tmp)
        replicas.start()
        replicas.start()
        per_wave = -(-len(specs) // params.waves)
        plan = _disruptions(params)
        for w in range(params.waves):
            wave = specs[w * per_wave : (w + 1) * per_wave]
            sim.store.bulk_create("pods", [p.manifest() for p in wave], namespace="default")
            time.sleep(0.5)
            if w + 1 in plan:
                # Disrupt in the middle of scheduling: once part of what was created is bound, so
                # the leader has bindings in flight and a half-drained queue when it goes.
                created = {p.name for p in specs[: (w + 1) * per_wave]} & fit
                wait_until(
                    partial(_bound_a_third, sim, created),
                    timeout_s=params.timeout_s / 4,
                    interval_s=0.02,
                    what="a third of the pods so far to be bound",
                )
                kind = plan[w + 1]
                if kind == "kill":
                    replicas.kill_leader(timeout=params.timeout_s / 4)
                    result.kills += 1
                else:
                    scope, mode = kind.split("/")
                    replicas.partition_leader(scope, mode, params, result)
                result.bound_at_kills.append(len(_bound_names(sim) & created))
            for proc in replicas.alive():
                assert proc.proc.poll() is None, f"{proc.name} exited:\n{proc.log()[-4000:]}"

        def done() -> bool:
            for proc in replicas.alive() if replicas else ():
                assert proc.proc.poll() is None, f"{proc.name} exited:\n{proc.log()[-4000:]}"
            bound, unfit_done = _progress(sim, fit, unfit)
            return bound == len(fit) and unfit_done == len(unfit)

        try:
            wait_until(done, timeout_s=params.timeout_s, interval_s=1.0, what="every pod to be decided")
        except AssertionError as exc:
            bound, unfit_done = _progress(sim, fit, unfit)
            raise AssertionError(
                f"{exc}: {bound}/{len(fit)} fitting pods bound, {unfit_done}/{len(unfit)} unfit pods "
                f"reported; faults {dict(sim.faults.counts)}"
            ) from None
        result.seconds = time.monotonic() - t0
        check_end_state(sim, nodes, specs, fit, unfit)
        result.scheduled = len(fit)
        result.unschedulable = len(unfit)
        result.faults = dict(sim.faults.counts)
        result.audit = dict(Counter(r.result for r in sim.audit.records()))
        result.double_binds = len(sim.audit.double_bindings())
        result.survivors = [p.name for p in replicas.alive() if p.proc.poll() is None]
        assert len(result.survivors) == len(replicas.alive()) == 2, "a replica that was not killed exited"
        return result
    finally:
        if replicas is not None:
            replicas.close()
        sim.stop()


PARTITIONS = ("replica/refuse", "lease-client/blackhole", "replica/blackhole", "lease-client/refuse")


def _disruptions(params: ChaosParams) -> dict[int, str]:
    """After which wave (1-based) comes which disruption: ``kill`` or ``scope/mode``, evenly spread,
    kills and partitions alternating while both last."""
    kinds: list[str] = []
    kills, parts = params.kills, params.partitions
    while kills or parts:
        if kills:
            kinds.append("kill")
            kills -= 1
        if parts:
            kinds.append(PARTITIONS[(params.partitions - parts) % len(PARTITIONS)])
            parts -= 1
    n = len(kinds)
    slots = [((k + 1) * params.waves) // (n + 1) for k in range(n)]
    if len(set(slots)) != n:
        raise ValueError(f"{n} disruptions do not fit in {params.waves} waves")
    return dict(zip(slots, kinds, strict=True))


def check_end_state(
    sim: SimCluster, nodes: list[NodeSpec], specs: list[PodSpec], fit: set[str], unfit: set[str]
) -> None:
    """The issue's end state, read from the store and the audit log."""
    by_node = {n.name: n for n in nodes}
    by_pod = {p.name: p for p in specs}
    pods = {p["metadata"]["name"]: p for p in sim.store.list("pods", "default")}
    assert set(pods) == set(by_pod), "pods appeared or disappeared"
    assert sim.audit.double_bindings() == [], "a pod was bound twice"
    bound_records = sim.audit.bound()
    failed = _failed_scheduling(sim)
    used: dict[str, Counter[str]] = defaultdict(Counter)
    ports: dict[str, Counter[int]] = defaultdict(Counter)
    for name, raw in pods.items():
        spec = by_pod[name]
        node_name = (raw.get("spec") or {}).get("nodeName")
        recs = bound_records.get(raw["metadata"]["uid"], [])
        if name in unfit:
            assert not node_name, f"pod {name} cannot fit anywhere but was bound to {node_name}"
            assert not recs
            assert name in failed, f"pod {name}: no FailedScheduling event"
            cond = _condition(raw) or {}
            assert (cond.get("status"), cond.get("reason")) == ("False", "Unschedulable"), (name, cond)
            continue
        assert node_name, f"pod {name} fits but is not bound"
        assert len(recs) == 1 and recs[0].node == node_name, f"pod {name}: audit {recs} vs {node_name}"
        node = by_node[node_name]
        assert fits_empty(spec, node), f"pod {name} bound to {node_name} where it does not fit: {spec}"
        u = used[node_name]
        u["cpu"] += spec.cpu_m
        u["memory"] += spec.memory
        u["gpu"] += spec.gpu
        u["pods"] += 1
        if spec.host_port:
            ports[node_name][spec.host_port] += 1
    for node_name, u in used.items():
        n = by_node[node_name]
        for res, cap in (("cpu", n.cpu_m), ("memory", n.memory), ("gpu", n.gpu), ("pods", n.pods)):
            assert u[res] <= cap, f"node {node_name} over-committed on {res}: {u[res]} > {cap}"
        clash = [port for port, count in ports[node_name].items() if count > 1]
        assert not clash, f"node {node_name}: host ports {clash} used twice"
