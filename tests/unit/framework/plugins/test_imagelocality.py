"""ImageLocality, ported from upstream
``pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go``: TestImageLocalityPriority
(7 cases) and TestNormalizedImageName (4 cases)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ksched.framework.interface import CycleState
from ksched.framework.plugins.imagelocality import ImageLocality, new, normalized_image_name
from ksched.framework.runtime import Framework
from tests.builders import cluster_of, container, make_node, pod

MB = 1024 * 1024
Images = list[tuple[list[str], int]]

NODE_40_300_2000: Images = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: Images = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900: Images = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: Images = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: Images = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: Images = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: Images = []

# (containers' images, init containers' images, nodes, expected scores)
CASES = [
    pytest.param(
        ["gcr.io/40", "gcr.io/250"],
        [],
        {"node1": NODE_40_300_2000, "node2": NODE_250_10},
        {"node1": 0, "node2": 5},
        id="two images spread on two nodes, prefer the larger image one",
    ),
    pytest.param(
        ["gcr.io/40", "gcr.io/300"],
        [],
        {"node1": NODE_40_300_2000, "node2": NODE_250_10},
        {"node1": 7, "node2": 0},
        id="two images on one node, prefer this node",
    ),
    pytest.param(
        ["gcr.io/10", "gcr.io/4000"],
        [],
        {"node1": NODE_4000_30, "node2": NODE_250_10},
        {"node1": 100, "node2": 0},
        id="if exceed limit, use limit",
    ),
    pytest.param(
        ["gcr.io/10", "gcr.io/4000"],
        [],
        {"node1": NODE_4000_30, "node2": NODE_250_10, "node3": NO_IMAGES},
        {"node1": 66, "node2": 0, "node3": 0},
        id="if exceed limit, use limit (with node which has no images present)",
    ),
    pytest.param(
        ["gcr.io/300", "gcr.io/600", "gcr.io/900"],
        [],
        {"node1": NODE_600_40_900, "node2": NODE_300_600_900, "node3": NO_IMAGES},
        {"node1": 32, "node2": 36, "node3": 0},
        id="pod with multiple large images, node2 is preferred",
    ),
    pytest.param(
        ["gcr.io/30", "gcr.io/40"],
        [],
        {"node1": NODE_20_30_40, "node2": NODE_4000_30},
        {"node1": 1, "node2": 0},
        id="pod with multiple small images",
    ),
    pytest.param(
        ["gcr.io/30"],
        ["gcr.io/300"],
        {"node1": NODE_40_300_2000, "node2": NODE_20_30_40},
        {"node1": 6, "node2": 0},
        id="include InitContainers: two images spread on two nodes, prefer the larger image one",
    ),
]


def _scores(images: list[str], init_images: list[str], nodes: dict[str, Images]) -> dict[str, int]:
    cluster = cluster_of([make_node(name, images=imgs) for name, imgs in nodes.items()])
    p = pod(
        containers=[container(f"c{i}", image=img) for i, img in enumerate(images)],
        init_containers=[container(f"i{i}", image=img) for i, img in enumerate(init_images)],
    )
    feasible = cluster.nodes.valid[: cluster.nodes.n_rows].copy()
    out = ImageLocality().score(CycleState(), p, cluster, feasible)
    return {
        cluster.nodes.nodes[r].name: int(out[r]) if isinstance(out, np.ndarray) else int(out)
        for r in np.flatnonzero(feasible)
    }


@pytest.mark.parametrize(("images", "init_images", "nodes", "expected"), CASES)
def test_image_locality_priority(
    images: list[str], init_images: list[str], nodes: dict[str, Images], expected: dict[str, int]
) -> None:
    assert _scores(images, init_images, nodes) == expected


def _fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        pytest.param("root", "root:latest", id="add :latest postfix 1"),
        pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", id="add :latest postfix 2"),
        pytest.param("root:tag", "root:tag", id="keep it as is 1"),
        pytest.param("root@" + _fake_digest("root"), "root@" + _fake_digest("root"), id="keep it as is 2"),
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


def test_no_image_anywhere_is_uniform_zero() -> None:
    cluster = cluster_of([make_node("a", images=NODE_250_10), make_node("b")])
    p = pod(containers=[container(image="nginx")])
    assert ImageLocality().score(CycleState(), p, cluster, np.ones(2, dtype=np.bool_)) == 0


def test_repeated_image_counts_per_container() -> None:
    """Two containers with one image add its scaled size twice (upstream loops over containers)."""
    assert _scores(["gcr.io/600", "gcr.io/600"], [], {"a": NODE_300_600_900}) == {
        "a": 100 * (2 * 600 * MB - 23 * MB) // (2000 * MB - 23 * MB)
    }


def test_framework_run() -> None:
    plugin = new(None, None)  # type: ignore[arg-type]
    fw = Framework("default-scheduler", scores=[(plugin, 1)])
    cluster = cluster_of([make_node("cold"), make_node("warm", images=NODE_600_40_900), make_node("none")])
    result = fw.schedule_pod(pod(containers=[container(image="gcr.io/900")]), cluster)
    assert result.selected_node == "warm"
