"""``python -m ksched run`` with kube-scheduler's own argument vectors, against the embedded cluster.

The first vector is kubeadm's static-pod manifest (plus the ports a test needs); the second adds a
``--config`` file, where kube-scheduler's precedence makes ``--kubeconfig`` and ``--kube-api-qps``
ignored (ksched says so in its log) and the leader-election flags still apply.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import pytest
import yaml

from ksched.sim import SimCluster
from ksched.sim.workloads import pod_template
from tests.integration.support import wait_until

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
ENV.pop("KUBECONFIG", None)
FAST_LEASE = [
    "--leader-elect-lease-duration=2s",
    "--leader-elect-renew-deadline=1500ms",
    "--leader-elect-retry-period=500ms",
]


def _node_of(sim: SimCluster, name: str) -> str:
    obj = sim.store.get("pods", name, "default") or {}
    return str((obj.get("spec") or {}).get("nodeName") or "")


def _ksched_run(argv: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """``python -m ksched run ARGV`` from the repository root, both output streams into ``log``."""
    return subprocess.Popen(
        [sys.executable, "-m", "ksched", "run", *argv],
        cwd=ROOT,
        env=ENV,
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )


def _run_until_bound(sim: SimCluster, tmp_path: Path, argv: list[str], pod: str) -> str:
    log_path = tmp_path / "ksched.log"
    with log_path.open("wb") as log:
        proc = _ksched_run(argv, log)
        try:
            sim.add_pods(1, pod_template(cpu="100m", memory="100Mi"), name_prefix=pod)
            bound = wait_until(lambda: _node_of(sim, f"{pod}0") or proc.poll() is not None, timeout_s=60)
            assert bound and proc.poll() is None, log_path.read_text(errors="replace")
            assert proc.poll() is None, log_path.read_text(errors="replace")
        finally:
            proc.terminate()
            proc.wait(20)
    assert proc.returncode == 0, log_path.read_text(errors="replace")
    return log_path.read_text(errors="replace")


def test_kubeadms_vector_schedules_a_pod(sim: SimCluster, tmp_path: Path) -> None:
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "scheduler.conf"))
    argv = [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=true",
        *FAST_LEASE,
        "--secure-port=0",
        "--insecure-port=0",
        "--profiling=false",
        "--kube-api-qps",
        "100",
        "--kube-api-burst=200",
        "--feature-gates=SchedulerQueueingHints=true,DRADeviceTaints=false",
        "--pod-max-in-unschedulable-pods-duration=1m",
        "-v",
        "2",
    ]
    log = _run_until_bound(sim, tmp_path, argv, "kubeadm-")
    assert "is ignored because --config is given" not in log
    assert "ksched requests and sends application/json" in log


def test_with_config_the_deprecated_flags_are_ignored(sim: SimCluster, tmp_path: Path) -> None:
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "scheduler.conf"))
    config = _write_config(tmp_path, kubeconfig, leaderElection={"leaderElect": True})
    argv = [
        f"--config={config}",
        "--kubeconfig=/nonexistent/scheduler.conf",
        "--kube-api-qps=5",
        "--leader-elect=false",
        "--secure-port=0",
        "--insecure-port=0",
        "--v=2",
    ]
    log = _run_until_bound(sim, tmp_path, argv, "config-")
    assert "flag --kubeconfig is ignored because --config is given" in log
    assert "flag --kube-api-qps is ignored because --config is given" in log
    assert "waiting to acquire the lease" not in log  # --leader-elect=false beat the file


def test_write_config_to_and_refusals(tmp_path: Path) -> None:
    out = tmp_path / "written.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "ksched", "run", f"--write-config-to={out}", "--leader-elect=false"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(out.read_text())["leaderElection"]["leaderElect"] is False
    bad = subprocess.run(
        [sys.executable, "-m", "ksched", "run", "--port=10251"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (bad.returncode, bad.stderr) == (2, "ksched run: error: unknown flag: --port\n")


def _write_config(tmp_path: Path, kubeconfig: str, **fields: object) -> Path:
    config = tmp_path / "config.yaml"
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig},
        **fields,
    }
    config.write_text(yaml.safe_dump(doc))
    return config


def test_delay_cache_until_active_starts_the_informers_on_leading(sim: SimCluster, tmp_path: Path) -> None:
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "scheduler.conf"))
    config = _write_config(tmp_path, kubeconfig, delayCacheUntilActive=True)
    argv = [f"--config={config}", "--leader-elect=true", *FAST_LEASE, "--secure-port=0", "--insecure-port=0"]
    _run_until_bound(sim, tmp_path, argv, "delayed-")


def _held_lease(sim: SimCluster) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    spec = {
        "holderIdentity": "another-replica",
        "leaseDurationSeconds": 3600,
        "acquireTime": now,
        "renewTime": now,
        "leaseTransitions": 0,
    }
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
        "spec": spec,
    }
    sim.store.create("leases", lease, namespace="kube-system")


@pytest.mark.parametrize(
    ("delay", "watching"), [(True, False), (False, True)], ids=["delayed", "not delayed"]
)
def test_a_standby_watches_only_without_delay_cache_until_active(
    sim: SimCluster, tmp_path: Path, delay: bool, watching: bool
) -> None:
    _held_lease(sim)
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "scheduler.conf"))
    config = _write_config(tmp_path, kubeconfig, delayCacheUntilActive=delay)
    argv = [
        f"--config={config}",
        "--leader-elect=true",
        *FAST_LEASE,
        "--secure-port=0",
        "--insecure-port=0",
        "--v=2",
    ]
    log_path = tmp_path / "standby.log"
    with log_path.open("wb") as log:
        proc = _ksched_run(argv, log)
        try:
            wait_until(
                lambda: "waiting to acquire the lease" in log_path.read_text(errors="replace"), timeout_s=60
            )
            if watching:
                wait_until(lambda: sim.api.watches.count() > 0, timeout_s=30)
            else:
                time.sleep(3)
                assert sim.api.watches.count() == 0, log_path.read_text(errors="replace")
            assert proc.poll() is None, log_path.read_text(errors="replace")
        finally:
            proc.terminate()
            proc.wait(20)
