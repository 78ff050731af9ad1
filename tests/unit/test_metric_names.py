"""The metric names and label sets ksched serves on /metrics, against the lists upstream registers.

The scheduler is run in-process for a few pods (scheduled ones, one that fits nowhere, one whose
binding fails, a node added after that), one API request of each kind goes through the request
tally as the client reports it, and the registry is rendered as the server renders it
(``generate_latest``). Every family below must be there with upstream's type and label names; label
values are checked where upstream fixes them (extension points, queues).

Sources (kubernetes/kubernetes): ``pkg/scheduler/metrics/metrics.go``;
``staging/src/k8s.io/component-base/metrics/prometheus/restclient/metrics.go`` (client-go's REST client
metrics); ``staging/src/k8s.io/component-base/metrics/prometheus/clientgo/leaderelection/metrics.go``;
the process collector of ``prometheus/client_golang`` that component-base registers.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ksched.cache.cluster import ClusterCache
from ksched.config import default_config
from ksched.framework.profile import build_profiles
from ksched.kube import events as kev
from ksched.kube.request_metrics import RequestTally
from ksched.metrics import FrameworkMetrics, Metrics
from ksched.model.node import node_from_dict
from ksched.model.pod import Pod, pod_from_dict
from ksched.scheduler.inbox import BindDone, Inbox, LeadershipChanged
from ksched.scheduler.loop import Scheduler
from ksched.scheduler.queue.factory import queue_for
from tests.builders import make_node, make_pod

SCHEDULER = "pkg/scheduler/metrics/metrics.go"
RESTCLIENT = "staging/src/k8s.io/component-base/metrics/prometheus/restclient/metrics.go"
LEADER = "staging/src/k8s.io/component-base/metrics/prometheus/clientgo/leaderelection/metrics.go"
PROCESS = "prometheus/client_golang process collector (component-base registers it)"

UPSTREAM: list[tuple[str, str, tuple[str, ...], str]] = [
    # (name as exposed, type, label names, source)
    ("scheduler_schedule_attempts_total", "counter", ("result", "profile"), SCHEDULER),
    ("scheduler_scheduling_attempt_duration_seconds", "histogram", ("result", "profile"), SCHEDULER),
    ("scheduler_scheduling_algorithm_duration_seconds", "histogram", (), SCHEDULER),
    ("scheduler_event_handling_duration_seconds", "histogram", ("event",), SCHEDULER),
    ("scheduler_preemption_victims", "histogram", (), SCHEDULER),
    ("scheduler_preemption_attempts_total", "counter", (), SCHEDULER),
    ("scheduler_pending_pods", "gauge", ("queue",), SCHEDULER),
    ("scheduler_pod_scheduling_sli_duration_seconds", "histogram", ("attempts",), SCHEDULER),
    ("scheduler_pod_scheduling_attempts", "histogram", (), SCHEDULER),
    (
        "scheduler_framework_extension_point_duration_seconds",
        "histogram",
        ("extension_point", "status", "profile"),
        SCHEDULER,
    ),
    (
        "scheduler_plugin_execution_duration_seconds",
        "histogram",
        ("plugin", "extension_point", "status"),
        SCHEDULER,
    ),
    (
        "scheduler_queueing_hint_execution_duration_seconds",
        "histogram",
        ("plugin", "event", "hint"),
        SCHEDULER,
    ),
    ("scheduler_queue_incoming_pods_total", "counter", ("queue", "event"), SCHEDULER),
    ("scheduler_goroutines", "gauge", ("operation",), SCHEDULER),
    ("scheduler_permit_wait_duration_seconds", "histogram", ("result",), SCHEDULER),
    ("scheduler_cache_size", "gauge", ("type",), SCHEDULER),  # "scheduler_scheduler_cache_size" before v1.33
    ("scheduler_unschedulable_pods", "gauge", ("plugin", "profile"), SCHEDULER),
    ("scheduler_plugin_evaluation_total", "counter", ("plugin", "extension_point", "profile"), SCHEDULER),
    ("scheduler_batch_attempts_total", "counter", ("profile", "result"), SCHEDULER),
    ("scheduler_inflight_events", "gauge", ("event",), SCHEDULER),
    ("rest_client_requests_total", "counter", ("code", "method", "host"), RESTCLIENT),
    ("rest_client_request_retries_total", "counter", ("code", "verb", "host"), RESTCLIENT),
    ("rest_client_request_duration_seconds", "histogram", ("verb", "host"), RESTCLIENT),
    ("rest_client_rate_limiter_duration_seconds", "histogram", ("verb", "host"), RESTCLIENT),
    ("rest_client_request_size_bytes", "histogram", ("verb", "host"), RESTCLIENT),
    ("rest_client_response_size_bytes", "histogram", ("verb", "host"), RESTCLIENT),
    ("leader_election_master_status", "gauge", ("name",), LEADER),
    ("process_cpu_seconds_total", "counter", (), PROCESS),
    ("process_resident_memory_bytes", "gauge", (), PROCESS),
    ("process_virtual_memory_bytes", "gauge", (), PROCESS),
    ("process_start_time_seconds", "gauge", (), PROCESS),
    ("process_open_fds", "gauge", (), PROCESS),
    ("process_max_fds", "gauge", (), PROCESS),
]

EXTENSION_POINTS = {
    "PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Unreserve", "Permit",
    "PreBindPreFlight", "PreBind", "Bind", "PostBind",
}
"""Every extension point a cycle and its binding run (metrics.go's values, and PreBindPreFlight,
which v1.35 runs by default: NominatedNodeNameForExpectation)."""
EVALUATED_POINTS = {"PreFilter", "Filter", "PreScore", "Score"}
"""Where upstream's instrumented plugins count evaluations (``instrumented_plugins.go``)."""
QUEUES = {"active", "backoff", "unschedulable", "gated"}


@dataclass(frozen=True)
class Family:
    type: str
    label_sets: frozenset[frozenset[str]]
    samples: tuple[tuple[str, dict[str, str]], ...]

    def values(self, label: str) -> set[str]:
        return {labels[label] for _, labels in self.samples if label in labels}


class AnsweringOutbox:
    """Answers every binding at once through the inbox; bindings of pods named ``fail-*`` fail."""

    def __init__(self, inbox: Inbox) -> None:
        self.inbox = inbox

    def bind(self, pod: Pod, node: str) -> None:
        error = RuntimeError("refused") if pod.name.startswith("fail-") else None
        self.inbox.put(BindDone(pod, node, error))

    def patch_status(self, pod: Any, patch: dict[str, Any]) -> None:
        pass

    def event(self, body: dict[str, Any]) -> None:
        pass

    def preempt(self, job: Any) -> None:
        pass


def _run_scheduler(metrics: Metrics) -> None:
    config = default_config()
    profiles = build_profiles(config, seed=0, recorder=FrameworkMetrics(metrics))
    ticks = itertools.count()
    clock = lambda: 1000.0 + next(ticks) * 0.001  # noqa: E731
    queue = queue_for(config, profiles, clock=clock, metrics=metrics)
    inbox = Inbox()
    sched = Scheduler(
        profiles=profiles,
        cache=ClusterCache(),
        queue=queue,
        outbox=AnsweringOutbox(inbox),
        inbox=inbox,
        metrics=metrics,
        clock=clock,
        wall_clock=clock,
    )
    for name in ("n1", "n2"):
        inbox.put(kev.Upserted("nodes", node_from_dict(make_node(name, cpu="8", memory="16Gi", pods=110))))
    for i in range(12):  # more than ten cycles: one of them times its plugin calls
        inbox.put(kev.Upserted("pods", pod_from_dict(make_pod(f"p{i}", requests={"cpu": "100m"}))))
    inbox.put(kev.Upserted("pods", pod_from_dict(make_pod("fail-bind", requests={"cpu": "100m"}))))
    inbox.put(kev.Upserted("pods", pod_from_dict(make_pod("too-big", requests={"cpu": "64"}))))
    inbox.put(LeadershipChanged(True))
    for kind in ("nodes", "pods"):
        inbox.put(kev.Synced(kind))
    sched.run(until=lambda s: s.scheduled_count >= 12 and s.failed_count >= 2)
    inbox.put(kev.Upserted("nodes", node_from_dict(make_node("n3", cpu="8", memory="16Gi", pods=110))))
    sched.run(until=lambda s: True)  # one step: the node event reaches the queue (queueing hints)


def _record_requests(tally: RequestTally) -> None:
    """One request of each kind, reported as :class:`~ksched.kube.client.ApiClient` reports them."""
    host = "10.0.0.1:6443"
    tally.attempt("GET", host, 0)
    tally.done("GET", host, "200", 0.004, 1200)
    tally.throttled("POST", host, 0.0)
    tally.attempt("POST", host, 180)
    tally.retried("POST", host, "503")
    tally.throttled("POST", host, 0.02)
    tally.attempt("POST", host, 180)
    tally.done("POST", host, "201", 0.03, 0)


def _families(text: str) -> dict[str, Family]:
    out: dict[str, Family] = {}
    for fam in text_string_to_metric_families(text):
        samples = tuple(
            (s.name, dict(s.labels)) for s in fam.samples if not s.name.endswith("_created")
        )
        label_sets = frozenset(frozenset(k for k in labels if k != "le") for _, labels in samples)
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        out[name] = Family(fam.type, label_sets, samples)
    return out


def _declared_labels(metrics: Metrics) -> dict[str, tuple[str, ...]]:
    """The label names the registry's collectors declare, for a family with no samples yet."""
    out: dict[str, tuple[str, ...]] = {}
    for attr in vars(metrics).values():
        name = getattr(attr, "_name", None) or getattr(attr, "name", None)
        labels = getattr(attr, "_labelnames", None) or getattr(attr, "labelnames", None)
        if isinstance(name, str) and labels is not None:
            kind = getattr(attr, "_type", "")
            out[name + "_total" if kind == "counter" else name] = tuple(labels)
    return out


Served = tuple[dict[str, Family], dict[str, tuple[str, ...]]]
"""The families on /metrics by exposed name, and the label names each collector declares."""


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    tally = RequestTally()
    metrics = Metrics(rest_client=tally)
    _run_scheduler(metrics)
    _record_requests(tally)
    yield _families(generate_latest(metrics.registry).decode()), _declared_labels(metrics)


@pytest.mark.parametrize(
    ("name", "kind", "labels"),
    [pytest.param(name, kind, labels, id=name) for name, kind, labels, _source in UPSTREAM],
)
def test_every_upstream_metric_is_served_with_its_labels(
    served: Served, name: str, kind: str, labels: tuple[str, ...]
) -> None:
    families, declared = served
    assert name in families, f"{name} is not on /metrics"
    family = families[name]
    assert family.type == kind
    if family.samples:
        assert family.label_sets == {frozenset(labels)}, family.label_sets
    else:  # registered, nothing recorded yet: the labels it declares
        assert set(declared.get(name, ())) == set(labels), f"{name} declares {declared.get(name)}"


def test_every_extension_point_of_every_cycle_is_observed(served: Served) -> None:
    families, _ = served
    points = families["scheduler_framework_extension_point_duration_seconds"].values("extension_point")
    assert points == EXTENSION_POINTS
    evaluated = families["scheduler_plugin_evaluation_total"].values("extension_point")
    assert evaluated == EVALUATED_POINTS
    timed = families["scheduler_plugin_execution_duration_seconds"].values("extension_point")
    assert {"PreFilter", "Filter", "PreScore", "Score"} <= timed
    assert families["scheduler_pending_pods"].values("queue") == QUEUES
