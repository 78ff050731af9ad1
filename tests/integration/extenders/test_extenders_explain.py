"""``ksched explain --config`` with extenders: it calls them (an extender server in its own process)
and shows their verdicts per node, in JSON and in text."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from conftest import ROOT, ExtenderServer

Server = Callable[..., ExtenderServer]


def node(name: str, labels: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def run_explain(tmp: Path, url: str, output: str) -> str:
    cluster = tmp / "cluster.yaml"
    cluster.write_text(
        yaml.safe_dump_all(
            [
                node("a", {"extender": "yes", "score": "2"}),
                node("b", {"extender": "yes", "score": "9"}),
                node("c", {}),
            ]
        )
    )
    pod = tmp / "pod.yaml"
    pod.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            }
        )
    )
    cfg = tmp / "cfg.yaml"
    ext = {"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 3}
    cfg.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "extenders": [ext],
            }
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ksched",
            "explain",
            "--cluster",
            str(cluster),
            "--pod",
            str(pod),
            "--config",
            str(cfg),
            "--output",
            output,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_explain_shows_extender_verdicts(tmp_path: Path, start_extender: Server) -> None:
    ext = start_extender(
        "--mode", "filter,prioritize", "--filter-label", "extender=yes", "--score-label", "score"
    )
    report = json.loads(run_explain(tmp_path, ext.url, "json"))
    assert report["selectedNode"] == "b"
    by = {n["name"]: n for n in report["nodes"]}
    assert by["c"]["feasible"] is False and by["c"]["plugin"] == "Extender"
    assert by["c"]["reasons"] == ["node(s) didn't have label extender=yes"]
    column = f"Extender {ext.url}"
    assert by["a"]["scores"][column] == 2 and by["a"]["weightedScores"][column] == 2 * 3 * 10
    assert by["b"]["weightedScores"][column] == 9 * 3 * 10
    text = run_explain(tmp_path, ext.url, "text")
    assert "Extender: node(s) didn't have label extender=yes" in text
    assert column in text
