"""The figures of a run, computed as upstream scheduler_perf computes them.

*SchedulingThroughput* (``test/integration/scheduler_perf/util.go``, throughputCollector): every
second, the pods scheduled since the previous tick; Average is the mean of those samples and PercNN
is element ``ceil(len*NN/100)-1`` of the sorted samples. Upstream starts ticking when the measured
pods are created and stops when they are all scheduled, so a last partial second is never sampled;
here the samples come from the binding timestamps of the embedded cluster's audit log, cut the same
way (full seconds from the moment the measured pods started to be created). A run shorter than one
second has no full sample, and gets one sample: pods over elapsed time.

Histogram quantiles (attempt duration, extension points, plugins) interpolate linearly within the
bucket, as Prometheus' ``histogram_quantile`` and component-base's ``Quantile`` do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

PERCENTILES = (50, 90, 95, 99)


def upstream_percentile(sorted_values: Sequence[float], p: float) -> float:
    """Element ``ceil(len*p/100)-1`` of ascending ``sorted_values`` (0 when empty)."""
    if not sorted_values:
        return 0.0
    i = max(0, math.ceil(len(sorted_values) * p / 100) - 1)
    return float(sorted_values[min(i, len(sorted_values) - 1)])


def throughput_samples(bind_times: Sequence[float], start: float, interval_s: float = 1.0) -> list[float]:
    """Per-interval scheduling throughput (pods/s) from bind timestamps, as upstream samples it."""
    if not bind_times:
        return []
    times = sorted(bind_times)
    end = times[-1]
    full = int((end - start) // interval_s)
    if full <= 0:
        elapsed = max(end - start, 1e-9)
        return [len(times) / elapsed]
    counts = [0] * full
    for t in times:
        k = int((t - start) // interval_s)
        if 0 <= k < full:
            counts[k] += 1
    return [c / interval_s for c in counts]


def throughput_summary(samples: Sequence[float]) -> dict[str, float]:
    """``{"average", "p50", "p90", "p95", "p99"}`` of the samples (upstream's DataItem)."""
    s = sorted(samples)
    out = {"average": sum(s) / len(s) if s else 0.0}
    for p in PERCENTILES:
        out[f"p{p}"] = upstream_percentile(s, p)
    return out


def latency_summary(latencies_s: Sequence[float]) -> dict[str, float]:
    """Mean and percentiles of exact latencies (seconds); nearest-rank like :func:`upstream_percentile`."""
    s = sorted(latencies_s)
    out = {"average": sum(s) / len(s) if s else 0.0, "max": s[-1] if s else 0.0}
    for p in PERCENTILES:
        out[f"p{p}"] = upstream_percentile(s, p)
    return out


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float:
    """The ``q`` quantile of a cumulative histogram given as ascending ``(upper_bound, count)``.

    Linear interpolation inside the bucket; the +Inf bucket answers with the last finite bound.
    Returns NaN when the histogram is empty.
    """
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    total = buckets[-1][1]
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return prev_bound
            if count == prev_count:
                return bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / (count - prev_count)
        prev_bound, prev_count = bound, count
    return prev_bound
