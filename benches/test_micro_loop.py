"""The control loop's per-pod work outside the cycle: watch-event decode, assume/forget, queue push/pop.

DESIGN §8 budgets decoding one watch event at ≤ 20 µs and the loop's overhead per pod (pop, assume,
hand-off, metrics) at ≤ 50 µs; these put a number on each part. Groups: ``decode``, ``cache``,
``queue``.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import orjson
import pytest

from benches.test_micro_cycle import build_cluster
from ksched.metrics import Metrics
from ksched.model.node import node_from_dict
from ksched.model.pod import pod_from_dict
from ksched.scheduler.queue import SchedulingQueue
from ksched.sim.workloads import make_nodes, make_pods, pod_template
from tests import builders


def _event_line(obj: dict[str, Any], uid: str) -> bytes:
    obj["metadata"].update(uid=uid, resourceVersion="123456", creationTimestamp="2026-01-01T00:00:00Z")
    return orjson.dumps({"type": "ADDED", "object": obj})


POD_LINE = _event_line(
    make_pods(1, pod_template(labels={"app": "web", "tier": "front"}, priority=0), "default", "web-")[0],
    "u-1",
)
NODE_LINE = _event_line(make_nodes(1, zones=3)[0], "n-1")


@pytest.mark.parametrize("kind", ["pod", "node"])
def test_decode_watch_event(benchmark: Any, kind: str) -> None:
    """One line of a watch stream to the record the scheduler keeps (orjson + the model's parser)."""
    line, decode = (POD_LINE, pod_from_dict) if kind == "pod" else (NODE_LINE, node_from_dict)
    benchmark.group = "decode"

    def run() -> Any:
        return decode(orjson.loads(line)["object"])

    assert benchmark(run) is not None


def test_assume_forget(benchmark: Any) -> None:
    """Assume a pod on a node of the 5,000-node cluster, then forget it: the cache's two hot updates."""
    cache = build_cluster(5_000)
    pod = builders.pod("assumed", uid="assumed-1", requests={"cpu": "250m", "memory": "512Mi"})
    benchmark.group = "cache"

    def run() -> None:
        cache.assume(pod, "node-01234")
        cache.forget(pod.uid)

    benchmark(run)
    assert pod.uid not in cache


@pytest.mark.parametrize("with_metrics", [False, True], ids=["no-metrics", "metrics"])
def test_queue_push_pop(benchmark: Any, with_metrics: bool) -> None:
    """Add a pending pod, pop it, finish it: the queue's part of every cycle (1,000 pods queued)."""
    clock = itertools.count().__next__
    queue = SchedulingQueue(clock=lambda: float(clock()), metrics=Metrics() if with_metrics else None)
    template = builders.pod("q", requests={"cpu": "100m"})
    for i in range(1_000):
        queue.add(dataclasses.replace(template, uid=f"bg-{i}", name=f"bg-{i}", priority=i % 3))
    counter = itertools.count()
    benchmark.group = "queue"

    def run() -> None:
        uid = f"q-{next(counter)}"
        queue.add(dataclasses.replace(template, uid=uid, name=uid, priority=5))
        pinfo = queue.pop()
        assert pinfo is not None
        queue.done(pinfo.pod.uid)

    benchmark(run)
