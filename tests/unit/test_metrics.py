"""ksched.metrics: every metric renders under upstream's exact name, type, labels and buckets.

Upstream: ``pkg/scheduler/metrics/metrics.go`` (reference §12).
"""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

from ksched import metrics as m

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
    "scheduler_cache_size": ("gauge", ("type",), None),
    "scheduler_event_handling_duration_seconds": ("histogram", ("event",), (0.0001, 2, 12)),
    "ksched_plugin_errors_total": ("counter", ("plugin", "extension_point"), None),
    # client-go's leaderelection metrics (component-base/metrics/prometheus/clientgo/leaderelection)
    "leader_election_master_status": ("gauge", ("name",), None),
}


def _touch(metrics: m.Metrics) -> None:
    """Give every labelled metric one child so its samples render."""
    for attr in vars(metrics).values():
        if attr is metrics.registry:
            continue
        labels = attr.labelnames if isinstance(attr, m.CycleHistogram) else attr._labelnames
        child = attr.labels(*("x" for _ in labels)) if labels else attr
        if hasattr(child, "observe"):
            child.observe(0.5)
        elif hasattr(child, "inc"):
            child.inc()


def test_rendered_names_and_types_equal_upstream() -> None:
    metrics = m.Metrics()
    _touch(metrics)
    text = generate_latest(metrics.registry).decode()
    types = {
        line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE ")
    }
    # prometheus_client adds a ``<metric>_created`` gauge per counter and histogram (upstream has none;
    # the CLI may switch them off process-wide with ``disable_created_metrics``).
    types = {k: v for k, v in types.items() if not k.endswith("_created")}
    assert types == {name: spec[0] for name, spec in EXPECTED.items()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_labels_and_buckets(name: str) -> None:
    metrics = m.Metrics()
    _touch(metrics)
    _kind, labels, buckets = EXPECTED[name]
    family = next(f for f in metrics.registry.collect() if f.name == name.removesuffix("_total"))
    sample_names = {"_bucket", "_count", "_sum", "_created", "_total", ""}
    for s in family.samples:
        assert s.name.removeprefix(name.removesuffix("_total")) in sample_names
        assert set(s.labels) - {"le"} == set(labels)
    if buckets is not None:
        got = sorted({float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")})
        want = [*m.exponential_buckets(*buckets), float("inf")]
        assert got == pytest.approx(want)


def test_constants_match_rendered_names() -> None:
    constants = {v for k, v in vars(m).items() if k.isupper() and isinstance(v, str) and v.startswith(
        ("scheduler_", "ksched_"))}
    assert constants == {name for name in EXPECTED if name.startswith(("scheduler_", "ksched_"))}


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
