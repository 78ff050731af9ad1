"""``ksched explain`` reads Namespace objects from the cluster file into the cache.

Through the real command line (``python -m ksched explain``): a cluster file listing Namespaces
explains as before, and a malformed Namespace is reported like any other bad object. In-process,
:func:`ksched.explain.load_cluster` puts the namespaces and their labels in the cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from ksched.explain import load_cluster
from ksched.model.selectors import parse_label_selector

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"

NAMESPACES = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev", "labels": {"env": "dev"}}},
]


def cluster_with(tmp_path: Path, extra: list[dict]) -> Path:
    doc = yaml.safe_load((EXAMPLES / "cluster.yaml").read_text())
    doc["items"] = extra + doc["items"]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run(cluster: Path) -> subprocess.CompletedProcess[str]:
    pod = EXAMPLES / "pod.yaml"
    return subprocess.run(
        [sys.executable, "-m", "ksched", "explain", f"--cluster={cluster}", f"--pod={pod}", "--output=json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cluster_file_with_namespaces_explains_as_before(tmp_path: Path) -> None:
    plain = run(cluster_with(tmp_path, []))
    with_ns = run(cluster_with(tmp_path, NAMESPACES))
    assert plain.returncode == 0 and with_ns.returncode == 0, with_ns.stderr
    assert json.loads(with_ns.stdout) == json.loads(plain.stdout)


def test_a_bad_namespace_is_a_one_line_error(tmp_path: Path) -> None:
    bad = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": {"env": 1}}}
    proc = run(cluster_with(tmp_path, [bad]))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "Namespace x" in lines[0] and "metadata.labels" in lines[0]


def test_load_cluster_puts_namespaces_in_the_cache(tmp_path: Path) -> None:
    cache = load_cluster(cluster_with(tmp_path, NAMESPACES)).cache
    assert cache.namespace_labels("prod") == {"env": "prod"}
    assert cache.namespace_labels("absent") == {}
    prod = parse_label_selector({"matchLabels": {"env": "prod"}}, "test", "namespaceSelector")
    assert cache.namespaces_matching(prod) == {"prod"}
