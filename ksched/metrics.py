"""Every Prometheus metric ksched records, with upstream kube-scheduler's names, labels and buckets.

Upstream: ``pkg/scheduler/metrics/metrics.go`` and ``profile_metrics.go`` (reference §12), and what
kube-scheduler's registry carries besides: client-go's REST client metrics as component-base
registers them (``component-base/metrics/prometheus/restclient/metrics.go``; recorded by
:mod:`ksched.kube.request_metrics`, rendered by :class:`RestClientMetrics`) and the process
collector (``process_*``; Python's ``python_*`` collectors stand where Go's ``go_*`` are). The
exposed names are upstream's exactly; ``prometheus_client`` adds ``_total`` to a counter's name
itself, so counters are created from the name without it and the ``*_TOTAL`` constants hold the name
as exposed. Metrics ksched adds are named ``ksched_*`` (``ksched_plugin_errors_total`` counts plugin
exceptions).

No side effects at import: :class:`Metrics` creates the collectors on the registry it is given (or
on a fresh :class:`~prometheus_client.CollectorRegistry`), never on the process-wide default.
``prometheus_client`` also exposes a ``<counter>_created`` sample per counter; upstream has no such
series, and turning it off is a process-wide switch (``disable_created_metrics``) that belongs in
the CLI, not here.

Thread-safety: the collectors are thread-safe (the I/O thread records bind results).

Hot paths take labelled children from a :class:`Children`, which memoizes them per label tuple:
``prometheus_client``'s ``labels()`` validates and stringifies every value and takes a lock on
each call, a cost paid several times per pod otherwise. A child stays valid because nothing here
removes or clears label sets.
"""

from __future__ import annotations

import collections
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Generic, Protocol, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

SUBSYSTEM: Final = "scheduler"

SCHEDULE_ATTEMPTS_TOTAL: Final = "scheduler_schedule_attempts_total"
SCHEDULING_ATTEMPT_DURATION_SECONDS: Final = "scheduler_scheduling_attempt_duration_seconds"
SCHEDULING_ALGORITHM_DURATION_SECONDS: Final = "scheduler_scheduling_algorithm_duration_seconds"
POD_SCHEDULING_SLI_DURATION_SECONDS: Final = "scheduler_pod_scheduling_sli_duration_seconds"
POD_SCHEDULING_ATTEMPTS: Final = "scheduler_pod_scheduling_attempts"
PENDING_PODS: Final = "scheduler_pending_pods"
QUEUE_INCOMING_PODS_TOTAL: Final = "scheduler_queue_incoming_pods_total"
FRAMEWORK_EXTENSION_POINT_DURATION_SECONDS: Final = "scheduler_framework_extension_point_duration_seconds"
PLUGIN_EXECUTION_DURATION_SECONDS: Final = "scheduler_plugin_execution_duration_seconds"
PREEMPTION_ATTEMPTS_TOTAL: Final = "scheduler_preemption_attempts_total"
PREEMPTION_VICTIMS: Final = "scheduler_preemption_victims"
PREEMPTION_GOROUTINES_DURATION_SECONDS: Final = "scheduler_preemption_goroutines_duration_seconds"
PREEMPTION_GOROUTINES_EXECUTION_TOTAL: Final = "scheduler_preemption_goroutines_execution_total"
UNSCHEDULABLE_PODS: Final = "scheduler_unschedulable_pods"
GOROUTINES: Final = "scheduler_goroutines"
PERMIT_WAIT_DURATION_SECONDS: Final = "scheduler_permit_wait_duration_seconds"
PLUGIN_EVALUATION_TOTAL: Final = "scheduler_plugin_evaluation_total"
BATCH_ATTEMPTS_TOTAL: Final = "scheduler_batch_attempts_total"
CACHE_SIZE: Final = "scheduler_cache_size"
EVENT_HANDLING_DURATION_SECONDS: Final = "scheduler_event_handling_duration_seconds"
QUEUEING_HINT_EXECUTION_DURATION_SECONDS: Final = "scheduler_queueing_hint_execution_duration_seconds"
INFLIGHT_EVENTS: Final = "scheduler_inflight_events"
PLUGIN_ERRORS_TOTAL: Final = "ksched_plugin_errors_total"
EVENTS_DROPPED_TOTAL: Final = "ksched_events_dropped_total"
EVENT_SERIES_UPDATES_TOTAL: Final = "ksched_event_series_updates_total"
EXTENDER_REQUEST_DURATION_SECONDS: Final = "ksched_extender_request_duration_seconds"

REST_CLIENT_REQUESTS_TOTAL: Final = "rest_client_requests_total"
REST_CLIENT_REQUEST_RETRIES_TOTAL: Final = "rest_client_request_retries_total"
REST_CLIENT_REQUEST_DURATION_SECONDS: Final = "rest_client_request_duration_seconds"
REST_CLIENT_RATE_LIMITER_DURATION_SECONDS: Final = "rest_client_rate_limiter_duration_seconds"
REST_CLIENT_REQUEST_SIZE_BYTES: Final = "rest_client_request_size_bytes"
REST_CLIENT_RESPONSE_SIZE_BYTES: Final = "rest_client_response_size_bytes"

# Label values used by upstream.
RESULT_SCHEDULED: Final = "scheduled"
RESULT_UNSCHEDULABLE: Final = "unschedulable"
RESULT_ERROR: Final = "error"
HINT_QUEUE: Final = "Queue"
HINT_QUEUE_SKIP: Final = "QueueSkip"
HINT_ERROR: Final = "Error"
POD_POPPED_IN_FLIGHT_EVENT: Final = "PodPopped"
"""``scheduler_inflight_events{event}`` counts the pods in flight under this label."""
QUEUE_ACTIVE: Final = "active"
QUEUE_BACKOFF: Final = "backoff"
QUEUE_UNSCHEDULABLE: Final = "unschedulable"
QUEUE_GATED: Final = "gated"
OPERATION_BINDING: Final = "binding"
OPERATION_PRIORITIZING_EXTENDER: Final = "prioritizing_extender"
SLI_ATTEMPTS_CAP: Final = 15
"""``pod_scheduling_sli_duration_seconds{attempts}`` is "1".."14", then "15+"."""


M = TypeVar("M", Counter, Gauge, Histogram)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream ``metrics.ExponentialBuckets``: ``start * factor**i`` for ``i`` in ``0..count-1``.

    ``prometheus_client`` appends ``+Inf`` itself.
    """
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError(
            f"exponential_buckets(start={start!r}, factor={factor!r}, count={count!r}): "
            "need count >= 1, start > 0 and factor > 1"
        )
    return tuple(start * factor**i for i in range(count))


def _strip_total(name: str) -> str:
    return name.removesuffix("_total")


def attempts_label(attempts: int) -> str:
    """The ``attempts`` label of the SLI histogram: ``"1"``..``"14"`` or ``"15+"``."""
    return f"{SLI_ATTEMPTS_CAP}+" if attempts >= SLI_ATTEMPTS_CAP else str(attempts)


class HistogramCounts(Protocol):
    """One label set of a histogram kept outside ``prometheus_client``: counts per bucket
    (non-cumulative, the last one +Inf) and the sum of the observations."""

    counts: Sequence[int]
    sum: float


class RestClientSource(Protocol):
    """What the API clients record (:class:`ksched.kube.request_metrics.RequestTally`), read at scrape
    time. Keys are label values in the order of the metric's labels; written by the I/O thread only."""

    requests: Mapping[tuple[str, str, str], int]
    """(code, method, host) -> count."""
    retries: Mapping[tuple[str, str, str], int]
    """(code, verb, host) -> count."""
    duration: Mapping[tuple[str, str], HistogramCounts]
    rate_limiter: Mapping[tuple[str, str], HistogramCounts]
    request_size: Mapping[tuple[str, str], HistogramCounts]
    response_size: Mapping[tuple[str, str], HistogramCounts]
    """(verb, host) -> histogram."""
    duration_bounds: Sequence[float]
    """Bucket bounds of the two durations (seconds)."""
    size_bounds: Sequence[float]
    """Bucket bounds of the two sizes (bytes)."""


@dataclass
class Metrics:
    """The collectors, created on ``registry`` (a fresh registry when None); ``rest_client`` is what
    the process's API clients record into (no ``rest_client_*`` samples without one)."""

    registry: CollectorRegistry | None = None
    rest_client: RestClientSource | None = None
    schedule_attempts: Counter = field(init=False)
    scheduling_attempt_duration: Histogram = field(init=False)
    scheduling_algorithm_duration: Histogram = field(init=False)
    pod_scheduling_sli_duration: Histogram = field(init=False)
    pod_scheduling_attempts: Histogram = field(init=False)
    pending_pods: Gauge = field(init=False)
    queue_incoming_pods: Counter = field(init=False)
    framework_extension_point_duration: CycleHistogram = field(init=False)
    plugin_execution_duration: CycleHistogram = field(init=False)
    preemption_attempts: Counter = field(init=False)
    preemption_victims: Histogram = field(init=False)
    preemption_goroutines_duration: Histogram = field(init=False)
    preemption_goroutines_execution: Counter = field(init=False)
    unschedulable_pods: Gauge = field(init=False)
    goroutines: Gauge = field(init=False)
    permit_wait_duration: Histogram = field(init=False)
    plugin_evaluation: PlainCounters = field(init=False)
    batch_attempts: PlainCounters = field(init=False)
    cache_size: Gauge = field(init=False)
    event_handling_duration: CycleHistogram = field(init=False)
    plugin_errors: Counter = field(init=False)
    queueing_hint_execution_duration: CycleHistogram = field(init=False)
    inflight_events: Gauge = field(init=False)
    rest_client_metrics: RestClientMetrics = field(init=False)

    def __post_init__(self) -> None:
        if self.registry is None:
            self.registry = CollectorRegistry()
        self._attempt_metrics()
        self._queue_metrics()
        self._framework_metrics()
        self._preemption_metrics()
        self._state_metrics()
        self._event_metrics()
        self.rest_client_metrics = RestClientMetrics(self.rest_client, registry=self.registry)
        # The process: CPU, memory, file descriptors, start time (process_*); the interpreter
        # (python_info) and its collector (python_gc_*), where kube-scheduler has go_*.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        for queue in (QUEUE_ACTIVE, QUEUE_BACKOFF, QUEUE_UNSCHEDULABLE, QUEUE_GATED):
            self.pending_pods.labels(queue=queue).set(0)
        # ---- ksched: Events (scheduler/binder.py, kube/event_series.py) ------------------------------
        self.events_dropped: Counter = self._counter(
            EVENTS_DROPPED_TOTAL,
            "Number of Events (ksched) not recorded, by reason: buffer_full, displaced (a queued Normal "
            "event gave way to a Warning), write_failed.",
            ("reason",),
        )
        self.event_series_updates: Counter = self._counter(
            EVENT_SERIES_UPDATES_TOTAL,
            "Number of Events (ksched) that repeated a recently recorded one and were counted into "
            "its series instead of being created.",
        )
        # ---- end ksched: Events ---------------------------------------------------------------------
        # ksched: scheduler extenders (scheduler/extenders/), one observation per HTTP call; result
        # is "success" or "error". Lets a benchmark tell the extenders' share of a cycle.
        self.extender_request_duration: Histogram = self._histogram(
            EXTENDER_REQUEST_DURATION_SECONDS,
            "Duration (ksched) of the requests to scheduler extenders, by extender (its urlPrefix), "
            "verb (filter, prioritize, bind, preempt) and result (success, error).",
            exponential_buckets(0.0001, 2, 16),
            ("extender", "verb", "result"),
        )
        # --- leader election (client-go's leaderelection metrics) -------------------------------------
        # ``leader_election_master_status{name}``: 1 while this process holds the Lease ``name``, 0
        # otherwise (set by ksched.runner's election callbacks; 0 from the start for a standby).
        self.leader_election_master_status: Gauge = self._gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease. Please make sure "
            "to group by name.",
            ("name",),
        )
        # --- end of leader election ------------------------------------------------------------------

    def _counter(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
        return Counter(_strip_total(name), doc, labels, registry=self.registry)

    def _gauge(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
        return Gauge(name, doc, labels, registry=self.registry)

    def _histogram(
        self, name: str, doc: str, buckets: tuple[float, ...], labels: tuple[str, ...] = ()
    ) -> Histogram:
        return Histogram(name, doc, labels, registry=self.registry, buckets=buckets)

    def _attempt_metrics(self) -> None:
        """What one scheduling attempt records: counts, latencies, the SLI."""
        self.schedule_attempts = self._counter(
            SCHEDULE_ATTEMPTS_TOTAL,
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"),
        )
        self.scheduling_attempt_duration = self._histogram(
            SCHEDULING_ATTEMPT_DURATION_SECONDS,
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            exponential_buckets(0.001, 2, 15),
            ("result", "profile"),
        )
        self.scheduling_algorithm_duration = self._histogram(
            SCHEDULING_ALGORITHM_DURATION_SECONDS,
            "Scheduling algorithm latency in seconds",
            exponential_buckets(0.001, 2, 15),
        )
        self.pod_scheduling_sli_duration = self._histogram(
            POD_SCHEDULING_SLI_DURATION_SECONDS,
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue "
            "and might involve multiple scheduling attempts.",
            exponential_buckets(0.01, 2, 20),
            ("attempts",),
        )
        self.pod_scheduling_attempts = self._histogram(
            POD_SCHEDULING_ATTEMPTS,
            "Number of attempts to successfully schedule a pod.",
            exponential_buckets(1, 2, 5),
        )

    def _queue_metrics(self) -> None:
        """The scheduling queue's sizes and moves."""
        self.pending_pods = self._gauge(
            PENDING_PODS,
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
            "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
            "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number "
            "of unschedulable pods that the scheduler never attempted to schedule because they are gated.",
            ("queue",),
        )
        self.queue_incoming_pods = self._counter(
            QUEUE_INCOMING_PODS_TOTAL,
            "Number of pods added to scheduling queues by event and queue type.",
            ("queue", "event"),
        )

    def _framework_metrics(self) -> None:
        """The framework's extension points and plugins (per-cycle histograms are CycleHistograms)."""
        self.framework_extension_point_duration = CycleHistogram(
            FRAMEWORK_EXTENSION_POINT_DURATION_SECONDS,
            "Latency for running all plugins of a specific extension point.",
            exponential_buckets(0.0001, 2, 12),
            ("extension_point", "status", "profile"),
            registry=self._registry(),
        )
        self.plugin_execution_duration = CycleHistogram(
            PLUGIN_EXECUTION_DURATION_SECONDS,
            "Duration for running a plugin at a specific extension point.",
            exponential_buckets(0.00001, 1.5, 20),
            ("plugin", "extension_point", "status"),
            registry=self._registry(),
        )

    def _preemption_metrics(self) -> None:
        """Preemption: attempts, victims, the asynchronous evictions."""
        self.preemption_attempts = self._counter(
            PREEMPTION_ATTEMPTS_TOTAL, "Total preemption attempts in the cluster till now"
        )
        self.preemption_victims = self._histogram(
            PREEMPTION_VICTIMS, "Number of selected preemption victims", exponential_buckets(1, 2, 7)
        )
        self.preemption_goroutines_duration = self._histogram(
            PREEMPTION_GOROUTINES_DURATION_SECONDS,
            "Duration in seconds for running goroutines for the preemption.",
            exponential_buckets(0.01, 2, 20),
            ("result",),
        )
        self.preemption_goroutines_execution = self._counter(
            PREEMPTION_GOROUTINES_EXECUTION_TOTAL, "Number of preemption goroutines executed.", ("result",)
        )

    def _state_metrics(self) -> None:
        """Gauges and counters of the scheduler's state, Permit waits, event handling, plugin errors."""
        self.unschedulable_pods = self._gauge(
            UNSCHEDULABLE_PODS,
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge "
            "for all plugins that caused it to not schedule and so this metric have meaning only when "
            "broken down by plugin.",
            ("plugin", "profile"),
        )
        self.goroutines = self._gauge(
            GOROUTINES,
            "Number of running goroutines split by the work they do such as binding.",
            ("operation",),
        )
        self.permit_wait_duration = self._histogram(
            PERMIT_WAIT_DURATION_SECONDS,
            "Duration of waiting on permit.",
            exponential_buckets(0.001, 2, 15),
            ("result",),
        )
        self.plugin_evaluation = PlainCounters(
            PLUGIN_EVALUATION_TOTAL,
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            labels=("plugin", "extension_point", "profile"),
            counted="plugin",
            registry=self._registry(),
        )
        self.batch_attempts = PlainCounters(
            BATCH_ATTEMPTS_TOTAL,
            "Counts of results when we attempt to use batching.",
            labels=("profile", "result"),
            counted="result",
            registry=self._registry(),
        )
        self.cache_size = self._gauge(
            CACHE_SIZE,
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ("type",),
        )
        self.plugin_errors = self._counter(
            PLUGIN_ERRORS_TOTAL,
            "Number of exceptions raised by plugins (ksched), by plugin and extension point.",
            ("plugin", "extension_point"),
        )

    def _event_metrics(self) -> None:
        """Cluster events: how long handling one takes, what each queueing hint costs, and the
        events kept for pods in flight. All recorded on the scheduling thread, for every informer
        event and every parked pod an event concerns, hence the cheap CycleHistograms."""
        self.event_handling_duration = CycleHistogram(
            EVENT_HANDLING_DURATION_SECONDS,
            "Event handling latency in seconds.",
            exponential_buckets(0.0001, 2, 12),
            ("event",),
            registry=self._registry(),
        )
        self.queueing_hint_execution_duration = CycleHistogram(
            QUEUEING_HINT_EXECUTION_DURATION_SECONDS,
            "Duration for running a queueing hint function of a plugin.",
            exponential_buckets(0.00001, 1.5, 20),
            ("plugin", "event", "hint"),
            registry=self._registry(),
        )
        self.inflight_events = self._gauge(
            INFLIGHT_EVENTS, "Number of events currently tracked in the scheduling queue.", ("event",)
        )

    def _registry(self) -> CollectorRegistry:
        assert self.registry is not None  # set first thing in __post_init__
        return self.registry

    def set_pending(self, counts: dict[str, int]) -> None:
        """Set ``scheduler_pending_pods`` from a ``{queue: count}`` mapping (the queue's ``pending()``)."""
        for queue, n in counts.items():
            self.pending_pods.labels(queue=queue).set(n)

    def incoming(self, queue: str, event: str) -> None:
        """One pod entered ``queue`` because of ``event`` (``scheduler_queue_incoming_pods_total``)."""
        self.queue_incoming_pods.labels(queue=queue, event=event).inc()


class CycleHistogram(Collector):
    """A labelled histogram for the scheduling thread's per-cycle observations.

    The framework observes every extension point of every cycle, several times per pod, where
    ``prometheus_client``'s histogram takes a lock and walks its buckets in Python on each
    observation. Here an observation is one ``bisect`` and two additions on the child. Only the
    scheduling thread observes; the scrape (another thread) reads counts that may be one
    observation apart between buckets and sum, which a scrape cannot tell from a slightly
    earlier one. The exposed samples are those of a ``prometheus_client`` histogram.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        buckets: Sequence[float],
        labelnames: Sequence[str],
        *,
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(float(b) for b in buckets)
        self._children: dict[tuple[str, ...], CycleHistogramChild] = {}
        registry.register(self)

    def labels(self, *values: str) -> CycleHistogramChild:
        """The child for one tuple of label values, in label order (memoized)."""
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name}: expected labels {self.labelnames}, got {values!r}")
            child = self._children[values] = CycleHistogramChild(self.bounds)
        return child

    def describe(self) -> list[HistogramMetricFamily]:
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[HistogramMetricFamily]:
        yield histogram_family(
            self.name, self.documentation, self.labelnames, self.bounds, list(self._children.items())
        )


def histogram_family(
    name: str,
    documentation: str,
    labelnames: Sequence[str],
    bounds: Sequence[float],
    children: Iterable[tuple[Sequence[str], HistogramCounts]],
) -> HistogramMetricFamily:
    """A histogram family from per-bucket counts kept elsewhere: the samples a ``prometheus_client``
    histogram with these ``bounds`` exposes."""
    family = HistogramMetricFamily(name, documentation, labels=labelnames)
    edges = [floatToGoString(b) for b in bounds] + ["+Inf"]
    for values, child in children:
        counts, total = list(child.counts), child.sum
        cumulative, running = [], 0
        for edge, n in zip(edges, counts, strict=True):
            running += n
            cumulative.append((edge, running))
        family.add_metric(list(values), cumulative, total)
    return family


class CycleHistogramChild:
    """One label set of a :class:`CycleHistogram`: counts per bucket (the last is +Inf) and the sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value


class PlainCounters(Collector):
    """A counter family kept as plain counters, one per tuple of values of its other labels
    (``scheduler_plugin_evaluation_total``, ``scheduler_batch_attempts_total``).

    The framework adds to the counts of several plugins on every cycle, several thousand times a
    second, where a ``prometheus_client`` counter takes a lock per increment; here an increment is a
    dictionary update on the scheduling thread (the only writer). A scrape copies each mapping in one
    step, which the interpreter lock keeps whole.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        *,
        labels: tuple[str, ...],
        counted: str,
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self._labels = labels
        self._at = labels.index(counted)
        self.key_labels = labels[: self._at] + labels[self._at + 1 :]
        """The labels :meth:`counts` is keyed by, in order: all but the counted one."""
        self._by_key: dict[tuple[str, ...], collections.Counter[str]] = {}
        registry.register(self)

    def counts(self, *key: str) -> collections.Counter[str]:
        """The counted label's value -> count for these values of :attr:`key_labels`, to add to
        (memoized)."""
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = collections.Counter()
        return found

    def describe(self) -> list[CounterMetricFamily]:
        return [self._family()]

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self._labels)

    def collect(self) -> Iterator[CounterMetricFamily]:
        family, at = self._family(), self._at
        for key, counts in list(self._by_key.items()):
            for value, n in list(counts.items()):
                family.add_metric([*key[:at], value, *key[at:]], n)
        yield family


class RestClientMetrics(Collector):
    """The ``rest_client_*`` families component-base registers for client-go, read from ``source``.

    Registered: requests (``code``, ``method``, ``host``), retries (``code``, ``verb``, ``host``),
    request duration and client-side rate-limiter wait (``verb``, ``host``; seconds), request and
    response sizes (``verb``, ``host``; bytes). Not registered: the exec-plugin families (the
    ``kubernetes`` package runs exec plugins; ksched sees neither their calls nor their
    certificates) and the transport-cache ones (ksched keeps no transport cache).
    """

    def __init__(self, source: RestClientSource | None, *, registry: CollectorRegistry) -> None:
        self.source = source
        registry.register(self)

    def describe(self) -> list[CounterMetricFamily | HistogramMetricFamily]:
        return list(self._families(None))

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        return self._families(self.source)

    @staticmethod
    def _families(src: RestClientSource | None) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        requests = CounterMetricFamily(
            REST_CLIENT_REQUESTS_TOTAL,
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=("code", "method", "host"),
        )
        retries = CounterMetricFamily(
            REST_CLIENT_REQUEST_RETRIES_TOTAL,
            "Number of request retries, partitioned by status code, verb, and host.",
            labels=("code", "verb", "host"),
        )
        if src is not None:
            for labels, n in list(src.requests.items()):
                requests.add_metric(list(labels), n)
            for labels, n in list(src.retries.items()):
                retries.add_metric(list(labels), n)
        yield requests
        yield retries
        for name, doc, attr, bounds in _REST_CLIENT_HISTOGRAMS:
            children = list(getattr(src, attr).items()) if src is not None else []
            edges = getattr(src, bounds) if src is not None else ()
            yield histogram_family(name, doc, ("verb", "host"), edges, children)


_REST_CLIENT_HISTOGRAMS = (
    (
        REST_CLIENT_REQUEST_DURATION_SECONDS,
        "Request latency in seconds. Broken down by verb, and host.",
        "duration",
        "duration_bounds",
    ),
    (
        REST_CLIENT_RATE_LIMITER_DURATION_SECONDS,
        "Client side rate limiter latency in seconds. Broken down by verb, and host.",
        "rate_limiter",
        "duration_bounds",
    ),
    (
        REST_CLIENT_REQUEST_SIZE_BYTES,
        "Request size in bytes. Broken down by verb and host.",
        "request_size",
        "size_bounds",
    ),
    (
        REST_CLIENT_RESPONSE_SIZE_BYTES,
        "Response size in bytes. Broken down by verb and host.",
        "response_size",
        "size_bounds",
    ),
)
"""(name, help, the source's attribute, the attribute of its bucket bounds) of each histogram."""


class FrameworkMetrics:
    """The profiles' :class:`~ksched.framework.runtime.FrameworkRecorder`: extension-point and
    plugin durations, plugin evaluations and out-of-tree plugin failures, with children looked up
    once per label set."""

    __slots__ = (
        "_batches",
        "_errors",
        "_evaluations",
        "_plugins",
        "_point_children",
        "_point_groups",
        "_points",
    )

    def __init__(self, metrics: Metrics) -> None:
        self._points = metrics.framework_extension_point_duration
        self._point_children: dict[tuple[str, str, str], CycleHistogramChild] = {}
        self._point_groups: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[CycleHistogramChild]] = {}
        self._plugins = metrics.plugin_execution_duration
        self._evaluations = metrics.plugin_evaluation
        self._errors = Children(metrics.plugin_errors)
        self._batches = metrics.batch_attempts

    def extension_point(self, profile: str, point: str, status: str, seconds: float) -> None:
        # Several times per cycle: the child's observe is inlined here.
        key = (point, status, profile)
        child = self._point_children.get(key)
        if child is None:
            child = self._point_children[key] = self._points.labels(*key)
        child.counts[bisect_left(child.bounds, seconds)] += 1
        child.sum += seconds

    def extension_points(
        self, profile: str, points: tuple[str, ...], statuses: tuple[str, ...], seconds: float
    ) -> None:
        # Once per pod for the binding cycle's points: the children of the group are looked up once.
        key = (profile, points, statuses)
        children = self._point_groups.get(key)
        if children is None:
            pairs = zip(points, statuses, strict=True)
            children = self._point_groups[key] = [self._points.labels(p, s, profile) for p, s in pairs]
        for child in children:
            child.counts[bisect_left(child.bounds, seconds)] += 1
            child.sum += seconds

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        self._plugins.labels(plugin, point, status).observe(seconds)

    def plugin_evaluations(self, profile: str, point: str) -> collections.Counter[str]:
        return self._evaluations.counts(point, profile)

    def plugin_failed(self, plugin: str, point: str) -> None:
        self._errors(plugin, point).inc()

    def batch_attempts(self, profile: str) -> collections.Counter[str]:
        """``scheduler_batch_attempts_total`` of ``profile``: result -> count, added to in place."""
        return self._batches.counts(profile)


class Children(Generic[M]):
    """One metric's labelled children, memoized per tuple of label values (in label order).

    Owned by the component that records the metric (the queue, the scheduling loop) rather than by
    :class:`Metrics`, whose attributes are exactly its collectors. Safe from any thread: a race at
    most asks ``labels()`` twice, and it returns the same child both times.
    """

    __slots__ = ("_by_values", "_labels")

    def __init__(self, metric: M) -> None:
        self._labels = metric.labels
        self._by_values: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        found = self._by_values.get(values)
        if found is None:
            found = self._by_values[values] = self._labels(*values)
        return found


__all__ = [
    "BATCH_ATTEMPTS_TOTAL",
    "CACHE_SIZE",
    "EVENTS_DROPPED_TOTAL",
    "EVENT_HANDLING_DURATION_SECONDS",
    "EVENT_SERIES_UPDATES_TOTAL",
    "FRAMEWORK_EXTENSION_POINT_DURATION_SECONDS",
    "GOROUTINES",
    "INFLIGHT_EVENTS",
    "PENDING_PODS",
    "PERMIT_WAIT_DURATION_SECONDS",
    "PLUGIN_ERRORS_TOTAL",
    "PLUGIN_EVALUATION_TOTAL",
    "PLUGIN_EXECUTION_DURATION_SECONDS",
    "POD_SCHEDULING_ATTEMPTS",
    "POD_SCHEDULING_SLI_DURATION_SECONDS",
    "PREEMPTION_ATTEMPTS_TOTAL",
    "PREEMPTION_GOROUTINES_DURATION_SECONDS",
    "PREEMPTION_GOROUTINES_EXECUTION_TOTAL",
    "PREEMPTION_VICTIMS",
    "QUEUEING_HINT_EXECUTION_DURATION_SECONDS",
    "QUEUE_INCOMING_PODS_TOTAL",
    "REST_CLIENT_RATE_LIMITER_DURATION_SECONDS",
    "REST_CLIENT_REQUESTS_TOTAL",
    "REST_CLIENT_REQUEST_DURATION_SECONDS",
    "REST_CLIENT_REQUEST_RETRIES_TOTAL",
    "REST_CLIENT_REQUEST_SIZE_BYTES",
    "REST_CLIENT_RESPONSE_SIZE_BYTES",
    "SCHEDULE_ATTEMPTS_TOTAL",
    "SCHEDULING_ALGORITHM_DURATION_SECONDS",
    "SCHEDULING_ATTEMPT_DURATION_SECONDS",
    "UNSCHEDULABLE_PODS",
    "Children",
    "CycleHistogram",
    "FrameworkMetrics",
    "HistogramCounts",
    "Metrics",
    "PlainCounters",
    "RestClientMetrics",
    "RestClientSource",
    "attempts_label",
    "exponential_buckets",
    "histogram_family",
]
