"""The scheduler's ``/metrics`` as numbers: histograms and counters, and the difference of two scrapes.

The bench scrapes once just before the measured pods are created and once when they are all bound,
and reports the difference, so the initial pods and startup never leak into the figures (upstream
resets the registry between ops to the same end). Parsing uses prometheus_client's own text parser.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from ksched.bench.stats import histogram_quantile

LabelKey = tuple[tuple[str, str], ...]


@dataclass(slots=True)
class Hist:
    """One labelled histogram series: cumulative ``(le, count)`` buckets, sum and count."""

    buckets: list[tuple[float, float]] = field(default_factory=list)
    sum: float = 0.0
    count: float = 0.0

    def minus(self, other: Hist | None) -> Hist:
        if other is None:
            return self
        prev = dict(other.buckets)
        return Hist(
            [(le, c - prev.get(le, 0.0)) for le, c in self.buckets],
            self.sum - other.sum,
            self.count - other.count,
        )

    def quantile(self, q: float) -> float:
        return histogram_quantile(q, self.buckets)

    def summary(self) -> dict[str, float]:
        """Count, total seconds, mean and p50/p90/p99 in milliseconds (NaN-free: 0 when empty)."""

        def ms(x: float) -> float:
            return 0.0 if math.isnan(x) else x * 1000.0

        return {
            "count": self.count,
            "total_s": self.sum,
            "mean_ms": ms(self.sum / self.count) if self.count else 0.0,
            "p50_ms": ms(self.quantile(0.50)),
            "p90_ms": ms(self.quantile(0.90)),
            "p99_ms": ms(self.quantile(0.99)),
        }


@dataclass(slots=True)
class Scrape:
    histograms: dict[str, dict[LabelKey, Hist]] = field(default_factory=dict)
    values: dict[str, dict[LabelKey, float]] = field(default_factory=dict)
    """Counters (by exposed sample name, e.g. ``..._total``) and gauges."""

    def minus(self, before: Scrape) -> Scrape:
        out = Scrape()
        for name, series in self.histograms.items():
            old = before.histograms.get(name, {})
            out.histograms[name] = {k: h.minus(old.get(k)) for k, h in series.items()}
        for name, vals in self.values.items():
            old_vals = before.values.get(name, {})
            out.values[name] = {k: v - old_vals.get(k, 0.0) for k, v in vals.items()}
        return out

    def hist(self, name: str, **match: str) -> Hist:
        """The sum of the series of ``name`` whose labels include ``match``."""
        total: dict[float, float] = {}
        out = Hist()
        for key, h in self.histograms.get(name, {}).items():
            labels = dict(key)
            if any(labels.get(k) != v for k, v in match.items()):
                continue
            for le, c in h.buckets:
                total[le] = total.get(le, 0.0) + c
            out.sum += h.sum
            out.count += h.count
        out.buckets = sorted(total.items())
        return out

    def by_label(self, name: str, *labels: str) -> dict[tuple[str, ...], Hist]:
        """The series of ``name`` grouped by the values of ``labels`` (other labels summed)."""
        groups: dict[tuple[str, ...], list[LabelKey]] = {}
        for key in self.histograms.get(name, {}):
            d = dict(key)
            groups.setdefault(tuple(d.get(lb, "") for lb in labels), []).append(key)
        out: dict[tuple[str, ...], Hist] = {}
        for group in groups:
            match = dict(zip(labels, group, strict=True))
            h = self.hist(name, **match)
            if h.count > 0:
                out[group] = h
        return out

    def value(self, name: str, **match: str) -> float:
        return sum(
            v
            for key, v in self.values.get(name, {}).items()
            if all(dict(key).get(k) == val for k, val in match.items())
        )


def parse(text: str) -> Scrape:
    out = Scrape()
    for family in text_string_to_metric_families(text):
        if family.type == "histogram":
            series: dict[LabelKey, Hist] = {}
            for s in family.samples:
                labels = {k: v for k, v in s.labels.items() if k != "le"}
                key = tuple(sorted(labels.items()))
                h = series.setdefault(key, Hist())
                if s.name.endswith("_bucket"):
                    h.buckets.append((float(s.labels["le"]), float(s.value)))
                elif s.name.endswith("_sum"):
                    h.sum = float(s.value)
                elif s.name.endswith("_count"):
                    h.count = float(s.value)
            for h in series.values():
                h.buckets.sort()
            out.histograms[family.name] = series
        elif family.type in ("counter", "gauge", "untyped"):
            for s in family.samples:
                if s.name.endswith("_created"):
                    continue
                out.values.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = float(s.value)
    return out
