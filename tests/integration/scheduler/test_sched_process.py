"""``ksched run`` as a process: /metrics and /readyz, SIGTERM, and two replicas with leader election.

Acceptance points 6, 7 and 9 of the scheduler-process issue. Each process runs ``python -m ksched run``
against the embedded cluster with ``--insecure-port 0``; its log (stderr) tells the port it serves on.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from sched_harness import (
    KschedProcess,
    assert_bound_exactly_once,
    assert_no_overcommit,
    bound_count,
    wait_until,
    write_config,
)

from ksched.sim import FaultConfig, LatencyRule, SimCluster
from ksched.sim.workloads import node_template, pod_template

StartProcess = Callable[..., KschedProcess]
LEASE_S, RENEW_S, RETRY_S = 4.0, 3.0, 1.0
LEADING_GAUGE = 'leader_election_master_status{name="kube-scheduler"}'
LEADING_METRIC = "leader_election_master_status"

UPSTREAM_METRICS = (
    "scheduler_schedule_attempts_total",
    "scheduler_pending_pods",
    "scheduler_scheduling_attempt_duration_seconds_bucket",
    "scheduler_scheduling_algorithm_duration_seconds_bucket",
    "scheduler_pod_scheduling_sli_duration_seconds_bucket",
    "scheduler_pod_scheduling_attempts_bucket",
    "scheduler_queue_incoming_pods_total",
    "scheduler_framework_extension_point_duration_seconds_bucket",
    "scheduler_plugin_evaluation_total",
    "rest_client_requests_total",
    "rest_client_request_duration_seconds_bucket",
    "process_cpu_seconds_total",
)


def _lease(sim: SimCluster) -> dict:
    return dict((sim.store.get("leases", "kube-scheduler", "kube-system") or {}).get("spec") or {})


def _holder(sim: SimCluster) -> str:
    return str(_lease(sim).get("holderIdentity") or "")


def test_sched_metrics_readyz_and_sigterm_releases_the_lease(
    sim: SimCluster, kubeconfig: Path, tmp_path: Path, start_process: StartProcess
) -> None:
    sim.add_nodes(10)
    sim.add_pods(50, pod_template(cpu="100m", memory="100Mi"))
    # Listing nodes takes 1.5 s, so /readyz can be seen failing before the caches sync.
    sim.faults.configure(FaultConfig(latency=(LatencyRule(verb="list", resource="nodes", ms=1500),)))
    config = write_config(
        tmp_path / "le.yaml", leader_elect=True, lease=LEASE_S, renew=RENEW_S, retry=RETRY_S
    )
    proc = start_process("solo", kubeconfig, config, leader_elect=True)

    status, body = proc.get("/readyz")
    assert status == 500, body  # upstream's healthz: 500 with each failed check, reason withheld
    assert "[-]sched-handler-sync failed: reason withheld" in body
    assert proc.get("/healthz") == (200, "ok")
    wait_until(lambda: proc.get("/readyz")[0] == 200, what="/readyz to turn ready")
    sim.faults.configure(FaultConfig())
    wait_until(lambda: bound_count(sim) == 50, what="50 pods to be bound")
    wait_until(lambda: proc.metric(LEADING_METRIC) == 1, what="the gauge to report the leader")
    identity = _holder(sim)
    assert identity

    sim.store.create("pods", {**pod_template(cpu="32"), "metadata": {"name": "too-big"}}, namespace="default")
    wait_until(
        lambda: proc.metric("scheduler_schedule_attempts_total", result="unschedulable") >= 1,
        what="an unschedulable attempt in /metrics",
    )
    status, text = proc.get("/metrics")
    assert status == 200
    for name in UPSTREAM_METRICS:
        assert f"\n{name}" in text, f"{name} missing from /metrics"
    scheduled = {"result": "scheduled", "profile": "default-scheduler"}
    wait_until(  # counted when the loop handles the bind outcome, a moment after the API stored it
        lambda: proc.metric("scheduler_schedule_attempts_total", **scheduled) == 50,
        what="50 scheduled attempts in /metrics",
    )
    assert proc.metric("scheduler_pending_pods", queue="unschedulable") == 1
    # The bindings' requests are counted, also when the bind worker child posts them.
    assert proc.metric("rest_client_requests_total", code="201", method="POST") >= 50
    assert "_created" not in text  # kube-scheduler has no *_created series

    t0 = time.monotonic()
    proc.signal(signal.SIGTERM)
    rc = proc.wait(timeout=15)
    took = time.monotonic() - t0
    print(f"SIGTERM -> exit {rc} in {took * 1000:.0f} ms")
    assert rc == 0, proc.log()
    assert took < 5.0
    lease = _lease(sim)
    assert lease["holderIdentity"] == "", lease
    assert "stopping: received SIGTERM" in proc.log()
    assert sim.audit.double_bindings() == []


def test_sched_two_replicas_one_leader_and_takeover_after_sigkill(
    sim: SimCluster, kubeconfig: Path, tmp_path: Path, start_process: StartProcess
) -> None:
    sim.add_nodes(20, node_template(cpu="4", memory="16Gi"))
    config = write_config(
        tmp_path / "le.yaml", leader_elect=True, lease=LEASE_S, renew=RENEW_S, retry=RETRY_S
    )
    first = start_process("first", kubeconfig, config, leader_elect=True)
    wait_until(lambda: first.metric(LEADING_METRIC) == 1, what="the first replica to lead")
    second = start_process("second", kubeconfig, config, leader_elect=True)
    _, body = wait_until(
        lambda: (r := second.get("/readyz?verbose"))[0] == 200 and r, what="the second replica to be ready"
    )
    assert "[+]leaderElection ok" in body  # a standby is ready too

    sim.add_pods(200, pod_template(cpu="100m", memory="100Mi"))
    wait_until(lambda: bound_count(sim) == 200, what="200 pods to be bound")
    # The API answers the binding before the scheduler's loop has counted the outcome: wait for it.
    wait_until(
        lambda: first.metric("scheduler_schedule_attempts_total", result="scheduled") == 200,
        what="the leader to count 200 scheduled attempts",
    )
    assert second.metric("scheduler_schedule_attempts_total") == 0  # the standby schedules nothing
    assert second.metric("scheduler_pending_pods") == 0  # ... yet its caches follow the cluster
    # client-go's gauge: 1 on the leader, 0 on the standby, labelled by the Lease's name
    assert LEADING_GAUGE + " 1.0" in first.get("/metrics")[1]
    assert LEADING_GAUGE + " 0.0" in second.get("/metrics")[1]
    leader_identity = _holder(sim)

    # Kill the leader right after it renewed, then measure until the standby holds the lease.
    renewed = _lease(sim).get("renewTime")
    wait_until(lambda: _lease(sim).get("renewTime") != renewed, interval=0.01, what="a renewal")
    first.proc.kill()
    t_kill = time.monotonic()
    first.wait(timeout=10)
    seq_at_kill = len(sim.audit.records())
    sim.add_pods(200, pod_template(cpu="100m", memory="100Mi"), start=200)
    wait_until(
        lambda: _holder(sim) not in ("", leader_identity),
        timeout=30,
        interval=0.02,
        what="a new lease holder",
    )
    takeover = time.monotonic() - t_kill
    lease = _lease(sim)
    assert lease["leaseTransitions"] == 1
    wait_until(lambda: bound_count(sim) == 400, timeout=30, interval=0.01, what="400 pods to be bound")
    first_bind_after = min(r.timestamp for r in sim.audit.records(seq_at_kill))
    print(f"takeover {takeover * 1000:.0f} ms after SIGKILL (lease {LEASE_S}s, retry {RETRY_S}s)")
    assert second.metric(LEADING_METRIC) == 1
    assert LEADING_GAUGE + " 1.0" in second.get("/metrics")[1]
    wait_until(
        lambda: second.metric("scheduler_schedule_attempts_total", result="scheduled") == 200,
        what="the new leader to count 200 scheduled attempts",
    )
    # client-go's rule (kept by ksched.scheduler.leader): a candidate takes over once it has seen no
    # change of the Lease for leaseDuration by its own clock. It polls every retryPeriod and wakes
    # at the expiry it computed, so it sees the last renewal at most one retryPeriod after it and
    # takes over right at expiry: within leaseDuration + retryPeriod of the kill (the bound),
    # plus the time of the API requests themselves.
    assert takeover <= LEASE_S + RETRY_S + 0.3, f"takeover took {takeover:.2f}s"
    assert first_bind_after > 0
    assert_bound_exactly_once(sim, 400)
    assert_no_overcommit(sim)
    assert "became leader" in second.log()

    second.signal(signal.SIGTERM)
    assert second.wait(timeout=15) == 0, second.log()
    assert _holder(sim) == ""
