"""The real kubectl against the sim: get/describe/apply/delete of nodes and pods, get leases and events."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ksched.sim import SimCluster

pytestmark = pytest.mark.kubectl

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

POD = """apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels: {LABELS}
spec:
  containers:
  - name: c
    image: nginx
"""

NODE = """apiVersion: v1
kind: Node
metadata:
  name: extra-node
  labels: {zone: z9}
"""


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout


def test_get_and_describe_nodes(kubeconfig: Path) -> None:
    out = kubectl(kubeconfig, "get", "nodes")
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["node-0", "Ready"],
        ["node-1", "Ready"],
        ["node-2", "Ready"],
    ]
    assert "node-1" in kubectl(kubeconfig, "get", "no", "-o", "name")
    desc = kubectl(kubeconfig, "describe", "node", "node-1")
    assert "topology.kubernetes.io/zone=zone-1" in desc and "pods:" in desc and "32Gi" in desc


def test_apply_get_describe_delete_pod(sim: SimCluster, kubeconfig: Path) -> None:
    assert "created" in kubectl(kubeconfig, "apply", "-f", "-", stdin=POD.replace("{LABELS}", "{app: web}"))
    assert "configured" in kubectl(
        kubeconfig, "apply", "-f", "-", stdin=POD.replace("{LABELS}", "{app: web, tier: fe}")
    )
    assert sim.store.get("pods", "web-1", "default")["metadata"]["labels"] == {"app": "web", "tier": "fe"}
    assert "unchanged" in kubectl(
        kubeconfig, "apply", "-f", "-", stdin=POD.replace("{LABELS}", "{app: web, tier: fe}")
    )
    sim.store.mutate(
        "pods",
        "web-1",
        "default",
        lambda p: {**p, "spec": {**p["spec"], "nodeName": "node-2"}},
        subresource="binding",
    )
    got = kubectl(kubeconfig, "get", "pods", "-o", "wide")
    assert got.splitlines()[0].split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "web-1" in got and "node-2" in got
    desc = kubectl(kubeconfig, "describe", "pod", "web-1")
    assert "Node:" in desc and "node-2" in desc and "tier=fe" in desc
    assert 'pod "web-1" deleted' in kubectl(kubeconfig, "delete", "pod", "web-1")
    assert sim.store.get("pods", "web-1", "default") is None


def test_apply_and_delete_node(sim: SimCluster, kubeconfig: Path) -> None:
    assert "created" in kubectl(kubeconfig, "apply", "-f", "-", stdin=NODE)
    assert sim.store.get("nodes", "extra-node")["metadata"]["labels"] == {"zone": "z9"}
    assert "deleted" in kubectl(kubeconfig, "delete", "node", "extra-node")
    assert sim.store.get("nodes", "extra-node") is None


def test_get_leases_and_events(sim: SimCluster, kubeconfig: Path) -> None:
    sim.store.create(
        "leases", {"metadata": {"name": "ksched"}, "spec": {"holderIdentity": "me"}}, namespace="kube-system"
    )
    sim.store.create(
        "events",
        {
            "metadata": {"name": "e1"},
            "reason": "Scheduled",
            "type": "Normal",
            "message": "bound to node-0",
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        },
        namespace="default",
    )
    leases = kubectl(kubeconfig, "get", "leases", "-A")
    assert "ksched" in leases and "me" in leases
    events = kubectl(kubeconfig, "get", "events")
    assert "Scheduled" in events and "pod/p" in events and "bound to node-0" in events
