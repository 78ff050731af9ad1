"""``ksched explain`` end to end: the real command line on files, JSON contract and bad input.

Runs ``python -m ksched`` in a subprocess so exit codes, stdout and stderr are what a user sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ksched", "explain", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def explain_json(*args: str) -> dict:
    proc = run(*args, "--output", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_example_pod_lands_on_the_ssd_node_with_its_image() -> None:
    report = explain_json("--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pod.yaml"))
    assert report["pod"] == "prod/web-7d4b9"
    assert report["profile"] == "default-scheduler"
    assert "message" not in report
    by_name = {n["name"]: n for n in report["nodes"]}
    assert [n["name"] for n in report["nodes"]] == ["node-a1", "node-a2", "node-b1", "node-b2", "node-gpu"]
    assert by_name["node-b1"] == {
        "name": "node-b1",
        "feasible": False,
        "plugin": "TaintToleration",
        "reasons": ["node(s) had untolerated taint(s)"],
        **({"detail": by_name["node-b1"]["detail"]} if "detail" in by_name["node-b1"] else {}),
    }
    assert by_name["node-b2"]["plugin"] == "NodeUnschedulable"
    assert by_name["node-b2"]["reasons"] == ["node(s) were unschedulable"]
    feasible = [n for n in report["nodes"] if n["feasible"]]
    assert report["feasibleNodes"] == len(feasible) == 2
    for n in feasible:
        assert set(n) == {"name", "feasible", "scores", "weightedScores", "totalScore"}
        assert n["totalScore"] == sum(n["weightedScores"].values())
        for plugin, score in n["scores"].items():
            assert 0 <= score <= 100
            assert n["weightedScores"][plugin] % max(score, 1) == 0 or score == 0
    assert by_name["node-a1"]["scores"]["NodeAffinity"] == 100
    assert by_name["node-a2"]["scores"]["NodeAffinity"] == 0
    assert report["selectedNode"] == max(feasible, key=lambda n: n["totalScore"])["name"]


def test_nothing_fits_gives_upstreams_message() -> None:
    report = explain_json(
        "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pod-unschedulable.yaml")
    )
    assert report["selectedNode"] is None
    assert report["feasibleNodes"] == 0
    assert report["message"].startswith("0/5 nodes are available: ")
    assert report["message"].endswith(".")
    by_name = {n["name"]: n for n in report["nodes"]}
    assert by_name["node-a1"]["reasons"] == ["Insufficient cpu"]
    assert by_name["node-a2"]["plugin"] == "NodePorts"
    # Entries are sorted as plain strings, as upstream's sort.Strings does.
    body = report["message"].removeprefix("0/5 nodes are available: ").removesuffix(".")
    entries = body.split(", ")
    assert entries == sorted(entries)


def test_gpu_pod_with_config_file() -> None:
    report = explain_json(
        "--cluster",
        str(EXAMPLES / "cluster.yaml"),
        "--pod",
        str(EXAMPLES / "pod-gpu.yaml"),
        "--config",
        str(EXAMPLES / "config-most-allocated.yaml"),
    )
    assert report["selectedNode"] == "node-gpu"
    by_name = {n["name"]: n for n in report["nodes"]}
    assert by_name["node-a1"]["plugin"] == "NodeAffinity"
    assert by_name["node-a1"]["reasons"] == ["node(s) didn't match Pod's node affinity/selector"]


def test_text_output_is_a_table() -> None:
    proc = run(
        "--cluster", str(EXAMPLES / "cluster.yaml"), "--pod", str(EXAMPLES / "pod.yaml"), "--output", "text"
    )
    assert proc.returncode == 0, proc.stderr
    assert "selected:" in proc.stdout and "node-b1" in proc.stdout and "TaintToleration" in proc.stdout


@pytest.mark.parametrize(
    ("pod_text", "cluster_text", "config_text", "expect"),
    [
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n"
            "  - name: c\n    resources: {requests: {cpu: abc}}\n",
            None,
            None,
            "spec.containers[0].resources.requests.cpu",
            id="cpu abc",
        ),
        pytest.param(
            None,
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '-2'}}\n",
            None,
            "Node n1: status.allocatable.cpu",
            id="negative allocatable",
        ),
        pytest.param(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n",
            None,
            None,
            "expected a Pod",
            id="a file that is not a Pod",
        ),
        pytest.param(
            None,
            None,
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
            "- schedulerName: default-scheduler\n  plugins:\n    score:\n      enabled: [{name: Foo}]\n",
            'unknown plugin "Foo"',
            id="unknown plugin name",
        ),
        pytest.param(
            None,
            None,
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
            "- schedulerName: default-scheduler\n  plugins:\n    score:\n"
            "      enabled: [{name: ImageLocality, weight: 4294967296}]\n",
            "weight",
            id="score weight outside the accepted range",
        ),
        pytest.param("{not yaml: [", None, None, "not valid YAML", id="broken YAML"),
        pytest.param(None, None, None, "cannot read", id="missing file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, pod_text: str | None, cluster_text: str | None, config_text: str | None, expect: str
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(pod_text or (EXAMPLES / "pod.yaml").read_text())
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cluster_text or (EXAMPLES / "cluster.yaml").read_text())
    args = ["--cluster", str(cluster), "--pod", str(pod)]
    if config_text is not None:
        (tmp_path / "config.yaml").write_text(config_text)
        args += ["--config", str(tmp_path / "config.yaml")]
    if expect == "cannot read":
        args[1] = str(tmp_path / "missing.yaml")
    proc = run(*args, "--output", "json")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert expect in lines[0]
