"""``ksched explain`` with malformed pods and cluster objects: a report or a clear error, never a crash.

The pod file holds a mutated Pod (see ``test_malformed_objects``); the cluster file holds three good
nodes plus, in some examples, a mutated Node, Namespace or Pod. :func:`ksched.explain.load_cluster`,
:func:`~ksched.explain.load_pod` and :func:`~ksched.explain.explain` must return a report or raise a
:class:`~ksched.errors.KschedError` (the command prints it and exits 2) whose message names the file,
the object and the field. One example also goes through the real command line to check the exit status
and that no traceback is printed.

Examples: a few hundred (CI); 1,000 with ``HYPOTHESIS_PROFILE=full``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_malformed_objects import PROFILE, base_namespace, base_node, base_pod, mutated

from ksched.errors import KschedError
from ksched.explain import explain, load_cluster, load_pod

ROOT = Path(__file__).resolve().parents[2]


def _good_nodes() -> list[dict[str, Any]]:
    nodes = []
    for i in range(3):
        n = base_node(f"n{i}")
        if i:
            n["spec"] = {}
        nodes.append(n)
    return nodes


def _write(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


@PROFILE
@given(
    pod=mutated(base_pod("bad-pod"), "bad-pod"),
    extra=st.one_of(
        st.none(),
        mutated(base_node("bad-node"), "bad-node"),
        mutated(base_namespace("bad-ns"), "bad-ns"),
        mutated(base_pod("bad-bound"), "bad-bound"),
    ),
)
def test_malformed_explain_reports_or_names_the_field(
    pod: dict[str, Any], extra: dict[str, Any] | None
) -> None:
    if extra and extra["metadata"]["name"] == "bad-bound" and isinstance(extra.get("spec"), dict):
        extra["spec"]["nodeName"] = "n1"
    with tempfile.TemporaryDirectory() as tmp:
        cluster_file = _write(Path(tmp) / "cluster.json", [*_good_nodes(), *([extra] if extra else [])])
        pod_file = Path(tmp) / "pod.json"
        pod_file.write_text(json.dumps(pod))
        try:
            report = explain(load_cluster(cluster_file), load_pod(pod_file))
        except KschedError as exc:
            msg = str(exc)
            assert str(cluster_file) in msg or str(pod_file) in msg or "bad-pod" in msg, msg
            named = [n for n in ("Pod default/bad-pod", "Node bad-node", "Namespace bad-ns",
                                 "Pod default/bad-bound") if n in msg]
            assert named or "schedulerName" in msg or "kind" in msg, f"no object named: {msg}"
            return
        assert report["pod"] == "default/bad-pod"
        assert len(report["nodes"]) >= 3


def test_malformed_explain_command_exits_2_without_traceback() -> None:
    pod = base_pod("bad-pod")
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1.2.3"
    with tempfile.TemporaryDirectory() as tmp:
        cluster_file = _write(Path(tmp) / "cluster.json", _good_nodes())
        pod_file = Path(tmp) / "pod.json"
        pod_file.write_text(json.dumps(pod))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, "-m", "ksched", "explain", "--cluster", str(cluster_file),
             "--pod", str(pod_file)],
            capture_output=True, text=True, env=env, timeout=60, check=False,
        )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Pod default/bad-pod" in proc.stderr
    assert "spec.containers[0].resources.requests.cpu" in proc.stderr
