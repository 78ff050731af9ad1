"""Plugins cannot write the cache's arrays, in a plain cycle or inside a what-if overlay.

A filter that tries to assign into the node table (in-tree style, through ``cluster.nodes``) or a
ClusterView column fails with numpy's read-only error; the runtime turns that into the plugin's
Error status and the cache is as it was. The same holds while preemption's dry run and the
nominated-pods pass have the overlay open: the overlay writes, plugins still only read.

Not covered, because numpy does not refuse it: ``ufunc.at`` (``np.add.at``) ignores the
read-only flag; ``tests/unit/cache/test_what_if.py`` shows the overlay check catching it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from ksched.cache.cluster import ClusterCache
from ksched.framework.api import ClusterView
from ksched.framework.interface import Code, CycleState, FilterResult
from ksched.framework.plugins.noderesources import new_fit
from ksched.framework.registry import Handle
from ksched.framework.runtime import Framework
from ksched.model.pod import Pod
from ksched.scheduler.queue.nominator import Nominator
from tests.builders import cluster_of, make_node, make_pod, pod
from tests.unit.framework.plugins.preemption_support import HIGH, LOW, fit_framework
from tests.unit.framework.test_nominated_filter import assert_same, snapshot

WRITES: dict[str, Callable[[ClusterCache], None]] = {
    "requested": lambda c: c.nodes.requested.__setitem__((0, 0), 1),
    "nonzero_requested": lambda c: c.nodes.nonzero_requested.__iadd__(1),
    "pod_count": lambda c: c.nodes.pod_count.__isub__(1),
    "pod_count rows": lambda c: c.nodes.pod_count.__setitem__(np.array([0, 1]), 5),
    "allocatable": lambda c: c.nodes.allocatable.fill(0),
    "valid": lambda c: c.nodes.valid.__setitem__(0, False),
    "row_version": lambda c: c.nodes.row_version.__setitem__(slice(None), 0),
    "label column": lambda c: c.nodes.label_column("zone").__setitem__(0, -1),
    "view requested": lambda c: ClusterView(c).requested("cpu").__setitem__(0, 0),
    "view pod_count": lambda c: ClusterView(c).pod_count.__setitem__(0, 0),
    "view valid": lambda c: ClusterView(c).valid.__setitem__(0, False),
}


def small_cluster() -> ClusterCache:
    nodes = [make_node(f"n{i}", cpu="2", memory="4Gi", pods=10, labels={"zone": "a"}) for i in range(3)]
    return cluster_of(nodes, [make_pod("run", node_name="n0", requests={"cpu": "500m"})])


class Writer:
    """A filter that tries one write per call and then lets every node pass."""

    name = "Writer"
    row_local = True

    def __init__(self, write: Callable[[ClusterCache], None]) -> None:
        self.write = write

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        self.write(cluster)
        return FilterResult.all_pass()


@pytest.mark.parametrize("what", list(WRITES))
def test_a_plugin_writing_the_arrays_fails_with_read_only_and_changes_nothing(what: str) -> None:
    c = small_cluster()
    before = snapshot(c)
    result = Framework("p", filters=[Writer(WRITES[what])]).schedule_pod(
        pod(name="in", requests={"cpu": "1"}), c
    )
    assert result.status.code == Code.ERROR
    assert "read-only" in result.status.message
    assert_same(before, snapshot(c))


class Recorder:
    """A row-local filter that, on every call, tries every write of :data:`WRITES` and records
    whether each one was refused and how many overlays were open."""

    name = "Recorder"
    row_local = True

    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterCache) -> FilterResult:
        refused = True
        for write in WRITES.values():
            try:
                write(cluster)
            except ValueError:
                continue
            refused = False
        self.calls.append((cluster.overlay_depth, refused))
        return FilterResult.all_pass()


def test_plugins_cannot_write_during_a_preemption_dry_run() -> None:
    nodes = [make_node(f"n{i}", cpu="1", memory="4Gi", pods=10, labels={"zone": "a"}) for i in range(3)]
    victims = [
        make_pod(f"v{i}", uid=f"v{i}", node_name=f"n{i}", requests={"cpu": "800m"}, priority=LOW)
        for i in range(3)
    ]
    c = cluster_of(nodes, victims)
    recorder = Recorder()
    fw, _ = fit_framework([recorder])
    p = pod(name="p", uid="p", requests={"cpu": "500m"}, priority=HIGH)
    before = snapshot(c)
    result = fw.schedule_pod(p, c)
    assert result.selected_node is None
    pf = fw.run_post_filter(p, c, result)
    assert pf is not None and pf.status.ok and pf.victims
    assert any(depth > 0 for depth, _ in recorder.calls)  # the dry run ran the filters in an overlay
    assert all(refused for _, refused in recorder.calls)
    assert_same(before, snapshot(c))


def test_plugins_cannot_write_during_the_nominated_pods_pass() -> None:
    c = small_cluster()
    recorder = Recorder()
    fit = new_fit(None, Handle("p"))
    fw = Framework("p", pre_filter=[fit], filters=[fit, recorder])
    nominator = Nominator()
    nominator.add(pod(name="big", uid="big", requests={"cpu": "1500m"}, priority=100), "n1")
    before = snapshot(c)
    result = fw.schedule_pod(
        pod(name="in", uid="in", requests={"cpu": "1"}, priority=50), c, nominated=nominator
    )
    assert result.selected_node in ("n0", "n2")
    assert any(depth > 0 for depth, _ in recorder.calls)  # the pass with nominated pods: an overlay
    assert all(refused for _, refused in recorder.calls)
    assert_same(before, snapshot(c))
