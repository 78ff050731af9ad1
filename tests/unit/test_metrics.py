"""ksched.metrics: every metric renders under upstream's exact name, type, labels and buckets.

Upstream: ``pkg/scheduler/metrics/metrics.go`` (reference §12) and
``component-base/metrics/prometheus/restclient/metrics.go`` (the ``rest_client_*`` families).
"""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

from ksched import metrics as m
from ksched.kube.request_metrics import RequestTally

REST_DURATION = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
REST_SIZE = (64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)

EXPECTED = {
    # name as exposed: (type, labels, buckets or None)
    "scheduler_schedule_attempts_total": ("counter", ("result", "profile"), None),
    "scheduler_scheduling_attempt_duration_seconds": ("histogram", ("result", "profile"), (0.001, 2, 15)),
    "scheduler_scheduling_algorithm_duration_seconds": ("histogram", (), (0.001, 2, 15)),
    "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", ("attempts",), (0.01, 2, 20)),
    "scheduler_pod_scheduling_attempts": ("histogram", (), (1, 2, 5)),
    "scheduler_pending_pods": ("gauge", ("queue",), None),
    "scheduler_queue_incoming_pods_total": ("counter", ("queue", "event"), None),
    "scheduler_framework_extension_point_duration_seconds": (
        "histogram", ("extension_point", "status", "profile"), (0.0001, 2, 12)),
    "scheduler_plugin_execution_duration_seconds": (
        "histogram", ("plugin", "extension_point", "status"), (0.00001, 1.5, 20)),
    "scheduler_preemption_attempts_total": ("counter", (), None),
    "scheduler_preemption_victims": ("histogram", (), (1, 2, 7)),
    "scheduler_preemption_goroutines_duration_seconds": ("histogram", ("result",), (0.01, 2, 20)),
    "scheduler_preemption_goroutines_execution_total": ("counter", ("result",), None),
    "scheduler_unschedulable_pods": ("gauge", ("plugin", "profile"), None),
    "scheduler_goroutines": ("gauge", ("operation",), None),
    "scheduler_permit_wait_duration_seconds": ("histogram", ("result",), (0.001, 2, 15)),
    "scheduler_plugin_evaluation_total": ("counter", ("plugin", "extension_point", "profile"), None),
    "scheduler_batch_attempts_total": ("counter", ("profile", "result"), None),
    "scheduler_cache_size": ("gauge", ("type",), None),
    "scheduler_event_handling_duration_seconds": ("histogram", ("event",), (0.0001, 2, 12)),
    "scheduler_queueing_hint_execution_duration_seconds": (
        "histogram", ("plugin", "event", "hint"), (0.00001, 1.5, 20)),
    "scheduler_inflight_events": ("gauge", ("event",), None),
    "ksched_plugin_errors_total": ("counter", ("plugin", "extension_point"), None),
    "ksched_events_dropped_total": ("counter", ("reason",), None),
    "ksched_event_series_updates_total": ("counter", (), None),
    "ksched_extender_request_duration_seconds": (
        "histogram", ("extender", "verb", "result"), (0.0001, 2, 16)),
    "rest_client_requests_total": ("counter", ("code", "method", "host"), None),
    "rest_client_request_retries_total": ("counter", ("code", "verb", "host"), None),
    "rest_client_request_duration_seconds": ("histogram", ("verb", "host"), REST_DURATION),
    "rest_client_rate_limiter_duration_seconds": ("histogram", ("verb", "host"), REST_DURATION),
    "rest_client_request_size_bytes": ("histogram", ("verb", "host"), REST_SIZE),
    "rest_client_response_size_bytes": ("histogram", ("verb", "host"), REST_SIZE),
    # client-go's leaderelection metrics (component-base/metrics/prometheus/clientgo/leaderelection)
    "leader_election_master_status": ("gauge", ("name",), None),
}
PROCESS = {  # prometheus_client's process, platform and gc collectors (kube-scheduler: process_*, go_*)
    "process_cpu_seconds_total": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_virtual_memory_bytes": "gauge",
    "process_start_time_seconds": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "python_info": "gauge",
    "python_gc_objects_collected_total": "counter",
    "python_gc_objects_uncollectable_total": "counter",
    "python_gc_collections_total": "counter",
}


def _metrics() -> m.Metrics:
    tally = RequestTally()
    metrics = m.Metrics(rest_client=tally)
    _touch(metrics, tally)
    return metrics


def _touch(metrics: m.Metrics, tally: RequestTally) -> None:
    """Give every labelled metric one child so its samples render."""
    for attr in vars(metrics).values():
        if attr is metrics.registry or attr is tally or isinstance(attr, m.RestClientMetrics):
            continue
        if isinstance(attr, m.PlainCounters):
            attr.counts(*("x" for _ in attr.key_labels))["x"] += 1
            continue
        labels = attr.labelnames if isinstance(attr, m.CycleHistogram) else attr._labelnames
        child = attr.labels(*("x" for _ in labels)) if labels else attr
        if hasattr(child, "observe"):
            child.observe(0.5)
        elif hasattr(child, "inc"):
            child.inc()
    tally.attempt("POST", "x", 100)
    tally.retried("POST", "x", "429")
    tally.throttled("POST", "x", 0.01)
    tally.done("POST", "x", "201", 0.02, 300)


def test_rendered_names_and_types_equal_upstream() -> None:
    text = generate_latest(_metrics().registry).decode()
    types = {
        line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE ")
    }
    # prometheus_client adds a ``<metric>_created`` gauge per counter and histogram (upstream has none;
    # the CLI may switch them off process-wide with ``disable_created_metrics``).
    types = {k: v for k, v in types.items() if not k.endswith("_created")}
    assert types == {**{name: spec[0] for name, spec in EXPECTED.items()}, **PROCESS}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_labels_and_buckets(name: str) -> None:
    metrics = _metrics()
    _kind, labels, buckets = EXPECTED[name]
    family = next(f for f in metrics.registry.collect() if f.name == name.removesuffix("_total"))
    sample_names = {"_bucket", "_count", "_sum", "_created", "_total", ""}
    for s in family.samples:
        assert s.name.removeprefix(name.removesuffix("_total")) in sample_names
        assert set(s.labels) - {"le"} == set(labels)
    if buckets is not None:
        got = sorted({float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")})
        bounds = m.exponential_buckets(*buckets) if len(buckets) == 3 else buckets  # (start, factor, n)
        want = [*bounds, float("inf")]
        assert got == pytest.approx(want)


def test_constants_match_rendered_names() -> None:
    prefixes = ("scheduler_", "ksched_", "rest_client_")
    constants = {
        v for k, v in vars(m).items() if k.isupper() and isinstance(v, str) and v.startswith(prefixes)
    }
    assert constants == {name for name in EXPECTED if name.startswith(prefixes)}


def test_a_delta_from_another_process_adds_up() -> None:
    """The bind worker's tally travels as JSON (``take``) and adds into the scheduler's (``merge``)."""
    child, parent = RequestTally(), RequestTally()
    for t in (child, parent):
        t.attempt("POST", "h:6443", 200)
        t.done("POST", "h:6443", "201", 0.003, 50)
    child.retried("POST", "h:6443", "<error>")
    delta = child.take()
    assert delta is not None and child.take() is None
    parent.merge(delta)
    assert parent.requests == {("201", "POST", "h:6443"): 2}
    assert parent.retries == {("<error>", "POST", "h:6443"): 1}
    assert parent.duration[("POST", "h:6443")].counts[0] == 2
    assert parent.request_size[("POST", "h:6443")].sum == 400.0
    parent.merge({"duration": [["POST", "h", [1, 2], 0.1]]})  # malformed: logged and left out
    assert ("POST", "h") not in parent.duration


def test_own_registry_and_no_global_side_effects() -> None:
    before = set(REGISTRY._names_to_collectors)
    a, b = m.Metrics(), m.Metrics(CollectorRegistry())
    assert a.registry is not b.registry and isinstance(a.registry, CollectorRegistry)
    assert set(REGISTRY._names_to_collectors) == before
    assert a.registry.get_sample_value("scheduler_pending_pods", {"queue": "gated"}) == 0


@pytest.mark.parametrize(
    ("attempts", "label"), [(1, "1"), (14, "14"), (15, "15+"), (99, "15+")]
)
def test_attempts_label(attempts: int, label: str) -> None:
    assert m.attempts_label(attempts) == label


def test_exponential_buckets_validation() -> None:
    assert m.exponential_buckets(1, 2, 3) == (1, 2, 4)
    with pytest.raises(ValueError, match="factor"):
        m.exponential_buckets(1, 1, 3)
