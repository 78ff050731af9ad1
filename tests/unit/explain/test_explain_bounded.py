"""``ksched explain`` refuses the cluster and pod bombs of tests/corpus/bombs.yaml fast and by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ksched.errors import ManifestError
from ksched.explain import load_cluster, load_pod
from tests.bounded_corpus import generate, recipes
from tests.unit.config.test_bounded_input import refused_cheaply

BOMBS = [r for r in recipes("bombs.yaml") if r["where"] in ("cluster", "pod")]
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("recipe", BOMBS, ids=[r["name"] for r in BOMBS])
def test_an_explain_bomb_is_refused_by_name(recipe: dict[str, Any], tmp_path: Path) -> None:
    path = generate(recipe, tmp_path)
    message = refused_cheaply(load_pod if recipe["where"] == "pod" else load_cluster, path, ManifestError)
    assert message.startswith(f"{path}: ")
    assert recipe["expect"] in message


def test_explain_refuses_a_pod_label_bomb_without_a_traceback(tmp_path: Path) -> None:
    (recipe,) = [r for r in BOMBS if r["name"] == "billion-laughs-pod-label"]
    pod = generate(recipe, tmp_path)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("kind: List\nitems: []\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ksched", "explain", "--cluster", str(cluster), "--pod", str(pod)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60,
    )
    assert proc.returncode != 0
    assert recipe["expect"] in proc.stderr and str(pod) in proc.stderr
    assert "Traceback" not in proc.stderr
