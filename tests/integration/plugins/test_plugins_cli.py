"""The example plugins from the command line, as a user runs them: ``ksched explain --plugin ...``
on the example files, and ``ksched run --plugin ... --config examples/plugins/config.yaml`` against
the embedded cluster over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.sim import SimCluster, SimConfig
from ksched.sim.workloads import node_template, pod_template
from tests.integration.support import wait_until

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "plugins"
PLUGIN_ARGS = (
    "--plugin",
    "examples.plugins.node_cost:NodeCost",
    "--plugin",
    "examples.plugins.system_reserve:SystemReserve",
    "--plugin",
    "examples.plugins.gang:Gang",
)
COST = "example.com/hourly-cost"


def ksched(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ksched", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_explain_shows_custom_plugins_like_built_in_ones() -> None:
    files = ("--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pod.yaml"))
    proc = ksched(
        "explain", *files, "--config", str(EXAMPLES / "config.yaml"), *PLUGIN_ARGS, "--output", "json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    by_name = {n["name"]: n for n in report["nodes"]}
    assert report["selectedNode"] == "node-mid"
    assert by_name["node-cheap"]["plugin"] == "SystemReserve"
    assert by_name["node-cheap"]["reasons"] == ["node(s) would use the 10% of cpu kept for system pods"]
    assert by_name["node-mid"]["scores"]["NodeCost"] == 100
    assert by_name["node-mid"]["weightedScores"]["NodeCost"] == 500
    assert by_name["node-dear"]["scores"]["NodeCost"] == 0
    # Without the plugins the same pod goes elsewhere, and the config cannot even be loaded.
    plain = json.loads(ksched("explain", *files, "--output", "json").stdout)
    assert plain["selectedNode"] != "node-mid" or plain["feasibleNodes"] == 3
    bad = ksched("explain", *files, "--config", str(EXAMPLES / "config.yaml"))
    assert bad.returncode == 2
    assert 'unknown plugin "NodeCost"' in bad.stderr


def test_unimportable_plugin_is_a_one_line_error() -> None:
    proc = ksched("run", "--plugin", "examples.plugins.nope:Nope", "--config", str(EXAMPLES / "config.yaml"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("ksched run: error: --plugin: 'examples.plugins.nope:Nope': cannot import")


@pytest.fixture
def sim() -> Iterator[SimCluster]:
    cluster = SimCluster(SimConfig(running_delay_s=0.0, grace_scale=0.0, bookmark_interval_s=0.5, seed=1))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def node_of(sim: SimCluster, name: str, namespace: str = "default") -> str:
    obj = sim.store.get("pods", name, namespace) or {}
    return str((obj.get("spec") or {}).get("nodeName") or "")


def condition_message(sim: SimCluster, name: str) -> str:
    obj = sim.store.get("pods", name, "default") or {}
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return str(c.get("message"))
    return ""


def test_ksched_run_loads_the_examples_and_they_change_placements(sim: SimCluster, tmp_path: Path) -> None:
    for prefix, cost in (("cheap-", "10"), ("mid-", "20"), ("dear-", "30")):
        sim.add_nodes(1, node_template(cpu="4", memory="16Gi", labels={COST: cost}), name_prefix=prefix)
    kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
    log = (tmp_path / "ksched.log").open("wb")
    # With --config, kube-scheduler ignores --kubeconfig: $KUBECONFIG carries it.
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "KUBECONFIG": str(kubeconfig),
    }
    args = ["run", "--v=2", "--config", str(EXAMPLES / "config.yaml")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ksched", *args, *PLUGIN_ARGS, "--secure-port=0", "--insecure-port=0"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    try:

        def logs() -> str:
            return (tmp_path / "ksched.log").read_text(errors="replace")

        # NodeCost (weight 5): small pods all go to the cheapest node.
        sim.add_pods(3, pod_template(cpu="100m", memory="100Mi"), name_prefix="small-")
        names = ("small-0", "small-1", "small-2")
        wait_until(lambda: all(node_of(sim, n) for n in names), what=f"small pods bound\n{logs()}")
        assert {node_of(sim, n) for n in names} == {"cheap-0"}

        # SystemReserve: 3700m leaves less than 10% of 4 cpu on every node: rejected with its reason.
        sim.add_pods(1, pod_template(cpu="3700m", memory="100Mi"), name_prefix="big-")
        expected = "0/3 nodes are available: 3 node(s) would use the 10% of cpu kept for system pods."
        # (DefaultPreemption appends its own "preemption: ..." part.)
        wait_until(
            lambda: condition_message(sim, "big-0").startswith(expected), what=f"big-0 rejected\n{logs()}"
        )
        assert node_of(sim, "big-0") == ""
        sim.add_pods(
            1, pod_template(cpu="3500m", memory="100Mi"), namespace="kube-system", name_prefix="sys-"
        )
        wait_until(lambda: node_of(sim, "sys-0", "kube-system"), what="the system pod bound")

        # Gang: two of three members wait (assumed, not bound); the third releases all three.
        gang: dict[str, Any] = pod_template(
            cpu="100m", memory="100Mi", labels={"example.com/gang": "g", "example.com/gang-size": "3"}
        )
        sim.add_pods(2, gang, name_prefix="member-")
        time.sleep(1.5)
        assert node_of(sim, "member-0") == "" and node_of(sim, "member-1") == ""
        sim.add_pods(1, gang, name_prefix="member-", start=2)
        members = ("member-0", "member-1", "member-2")
        wait_until(lambda: all(node_of(sim, n) for n in members), what=f"gang bound\n{logs()}")
        assert proc.poll() is None, logs()
        assert "out-of-tree plugins available: Gang, NodeCost, SystemReserve" in logs()
    finally:
        proc.terminate()
        proc.wait(15)
        log.close()
