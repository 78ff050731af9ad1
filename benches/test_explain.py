"""``ksched explain`` on a 5,000-node, 50,000-pod cluster file, parsing included.

The issue's target: under 3 s for the whole command. Each round runs the real command line in a
fresh process, so interpreter start-up and imports are counted too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from benches.cluster_files import POD, write_cluster


@pytest.fixture(scope="module")
def big_cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("explain")
    cluster = write_cluster(root / "cluster.json", 5000, 50000)
    pod = root / "pod.json"
    pod.write_bytes(orjson.dumps(POD))
    return cluster, pod


def test_explain_5000_nodes_50000_pods(benchmark, big_cluster: tuple[Path, Path]) -> None:
    cluster, pod = big_cluster

    def once() -> None:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "ksched",
                "explain",
                "--cluster",
                str(cluster),
                "--pod",
                str(pod),
                "--output",
                "json",
            ],
            capture_output=True,
            check=True,
        )
        assert orjson.loads(proc.stdout)["selectedNode"] is not None

    benchmark.pedantic(once, rounds=3, iterations=1)
