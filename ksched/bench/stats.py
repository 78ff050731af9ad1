"""The figures of a run, computed as upstream scheduler_perf computes them.

*SchedulingThroughput* (``test/integration/scheduler_perf/util.go``, throughputCollector, as of
the newest upstream): a tick every second from the moment the measured pods start to be created;
ticks before any of them is scheduled are not sampled, and the first tick that sees some only sets
the baseline (upstream skips it as an outlier: sampling and creating pods start independently);
each later tick samples the pods scheduled since the last sample over the time since it, and a tick
that saw none is merged into the next sample (which then counts once per interval it spans).
Sampling stops when all measured pods are scheduled, so a last partial second is never sampled.
Average is the mean of the samples and PercNN element ``ceil(len*NN/100)-1`` of the sorted samples.
Here the ticks are replayed on the binding timestamps of the embedded cluster's audit log.

A run too short for one sample (under two seconds from the first creation to the last binding)
would have none upstream; it gets one: the pods bound after the baseline tick over the time from it
to the last binding, or, before any baseline, all pods over the time from the start.

Histogram quantiles (attempt duration, extension points, plugins) interpolate linearly within the
bucket, as Prometheus' ``histogram_quantile`` and component-base's ``Quantile`` do.
"""

from __future__ import annotations

import bisect
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
    """Scheduling throughput samples (pods/s) from bind timestamps, as upstream's collector takes
    them (see the module docstring)."""
    if not bind_times:
        return []
    times = sorted(bind_times)
    end = times[-1]
    samples: list[float] = []
    base_t: float | None = None  # the last sample's tick (first: the baseline tick)
    base_count = 0
    skipped = 0
    for k in range(1, int((end - start) // interval_s) + 1):  # the ticks before the last binding
        tick = start + k * interval_s
        count = bisect.bisect_right(times, tick)
        if count == 0:
            continue
        if base_t is None:
            base_t, base_count = tick, count
            continue
        if count == base_count:
            skipped += 1
            continue
        samples.extend([(count - base_count) / (tick - base_t)] * (skipped + 1))
        base_t, base_count, skipped = tick, count, 0
    if samples:
        return samples
    if base_t is not None and end > base_t and len(times) > base_count:
        return [(len(times) - base_count) / (end - base_t)]
    return [len(times) / max(end - start, 1e-9)]


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
